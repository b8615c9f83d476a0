"""Stage before you drain (issue 46): drain-to-Done of an OS update, with and without the
image staged before the drain.

The agent runs as a real subprocess (the e2e harness) against the fake API server, with the
rpm-ostree stand-in given a registry pull time (``MCD_FAKE_PULL_SECONDS``, :data:`PULL_SECONDS`;
a real OS image pull takes minutes, scaled down here so the bench stays short). A drain
controller thread answers the agent's drain requests at once (the drain itself is the
``drain 100 pods`` row's business). The figure is the time the node spends drained: from
the moment the agent asks for the drain (``desiredDrain``) to Done on the new config, the
reboot included (the harness stops the agent, boots the staged deployment and starts it
again). The baseline is the same update with staging turned off
(``MCD_STAGE_BEFORE_DRAIN=0``: the pull happens inside the drain, as upstream). Both run
alternately, each to a new image.

Target: the drained time with staging at most :data:`STAGE_RATIO` of the baseline's: the
pull no longer counts, what stays is the deploy, the reboot and the agent's start.
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from pathlib import Path

from bench.common import Row, print_table, ratio_check
from mcd.agent.bootloader.stage import ENABLED_ENV
from mcd.model.vocabulary import Annotation
from tests.e2e.configs import worker
from tests.e2e.harness import AgentNode, create_config
from tests.fakes.kubecluster import TestCluster

PULL_SECONDS = 8.0
"""The stand-in's pull time of an OS image not yet in the repository."""
STAGE_RATIO = 0.6
"""``make bench``: drained time with staging at most this share of the drained time without."""
STAGE_LOAD_RATIO = 0.9
"""``make test``: the same with headroom; load stretches the reboot and the agent's start,
which both sides pay, never the pull time the staged side leaves out of the drain."""
IMAGE = "quay.io/openshift/os@sha256:"


class DrainController:
    """Answers ``desiredDrain`` at once and remembers when each drain request was seen."""

    def __init__(self, node: AgentNode) -> None:
        self.node = node
        self.asked: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            a = self.node.annotations()
            wanted = a.get(Annotation.DESIRED_DRAIN, "")
            if wanted and a.get(Annotation.LAST_APPLIED_DRAIN) != wanted:
                self.asked.setdefault(wanted, time.perf_counter())
                self.node.cluster.annotate(self.node.name, {Annotation.LAST_APPLIED_DRAIN: wanted})

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)


def _drained_seconds(node: AgentNode, drains: DrainController, name: str, rebooted: int) -> float:
    """Set desiredConfig to ``name``; reboot the node when it asks; the seconds from its drain
    request to Done on ``name``."""
    node.cluster.annotate(node.name, {Annotation.DESIRED_CONFIG: name})
    node.wait_reboot(rebooted + 1, timeout=120)
    node.reboot()
    node.wait_state("Done", name, timeout=120)
    done = time.perf_counter()
    return done - drains.asked[f"drain-{name}"]


def _node(cluster: TestCluster, workdir: Path, staged: bool) -> tuple[AgentNode, DrainController]:
    node = AgentNode(cluster, workdir, "stage" if staged else "nostage", drain_mode="controller")
    node.base_env["MCD_FAKE_PULL_SECONDS"] = str(PULL_SECONDS)
    node.base_env[ENABLED_ENV] = "1" if staged else "0"
    first = cluster.name(f"rendered-{node.name}-0")
    doc = worker(first)
    create_config(cluster, doc)
    node.provision(doc)
    first_annotations: dict[str, str | None] = {
        Annotation.CURRENT_CONFIG: first,
        Annotation.DESIRED_CONFIG: first,
        Annotation.STATE: "Done",
    }
    cluster.annotate(node.name, first_annotations)
    drains = DrainController(node)  # the agent's start asks for an uncordon first
    try:
        node.start()
        node.wait_ready(60)
        node.wait_state("Done", first, timeout=60)
    except BaseException:
        drains.close()
        node.close()
        raise
    return node, drains


def bench_stage(workdir: Path, rounds: int = 2) -> Row:
    workdir.mkdir(parents=True, exist_ok=True)
    cluster = TestCluster(workdir)
    nodes: dict[bool, tuple[AgentNode, DrainController]] = {}
    times: dict[bool, list[float]] = {True: [], False: []}
    try:
        for staged in (True, False):
            nodes[staged] = _node(cluster, workdir / str(staged), staged)
        for i in range(rounds):
            for staged, (node, drains) in nodes.items():
                name = cluster.name(f"rendered-{node.name}-{i + 1}")
                create_config(cluster, worker(name, image=f"{IMAGE}{i + 1:04d}{int(staged)}"))
                times[staged].append(_drained_seconds(node, drains, name, i))
    finally:
        for node, drains in nodes.values():
            drains.close()
            node.close()
        cluster.close()
    figure, base = statistics.median(times[True]), statistics.median(times[False])
    target, passed = ratio_check(figure, base, STAGE_RATIO)
    load_target, load_passed = ratio_check(figure, base, STAGE_LOAD_RATIO)
    return Row(f"drain -> Done, OS update, staged ({PULL_SECONDS:g} s pull)", figure, base,
               target, passed, load_target=load_target, load_passed=load_passed)  # fmt: skip


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        rows = [bench_stage(Path(tmp) / "stage")]
    print_table(rows)


if __name__ == "__main__":
    main()
