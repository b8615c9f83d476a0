"""The rollout loop both the real nodes (:mod:`tests.nodes.test_daemonset`) and the stand-in
kubelet (:mod:`tests.e2e.test_standin_loop`) run, so that their timings compare: the pool, its
first rendered config (a file and an enabled unit: a reboot from the empty install config),
and the timeline of each node's steps, printed the same way by both (``pytest -s``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcd.model.vocabulary import Annotation

Obj = dict[str, Any]
FILE = "/etc/mcd-realnode/hello.conf"
UNIT = "mcd-realnode-hello.service"
HELLO = "hello from mcd on a real node\n"
UNIT_TEXT = (
    "[Unit]\nDescription=mcd realnode test\n[Service]\nType=oneshot\n"
    "ExecStart=/bin/true\nRemainAfterExit=yes\n[Install]\nWantedBy=multi-user.target\n"
)
STEPS = ("targeted", "drain asked", "drained", "working", "rebooted", "done")
"""The steps of a node's update, in the order they happen."""


def machineconfig(name: str, config: Obj, role: str | None = None) -> Obj:
    labels = {"machineconfiguration.openshift.io/role": role} if role else {}
    return {"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
            "metadata": {"name": name, "labels": labels},
            "spec": {"config": {"ignition": {"version": "3.4.0"}, **config}}}  # fmt: skip


def pool() -> Obj:
    return {
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
        "metadata": {"name": "worker"},
        "spec": {
            "machineConfigSelector": {"matchLabels": {
                "machineconfiguration.openshift.io/role": "worker"}},
            "nodeSelector": {"matchLabels": {"node-role.kubernetes.io/worker": ""}},
            "maxUnavailable": 1,
        },
    }  # fmt: skip


def hello_config() -> Obj:
    return machineconfig("50-worker-hello", {
        "storage": {"files": [{"path": FILE, "mode": 0o644,
                               "contents": {"source": "data:," + HELLO.replace(" ", "%20")
                                            .replace("\n", "%0A")}}]},
        "systemd": {"units": [{"name": UNIT, "enabled": True, "contents": UNIT_TEXT}]},
    }, role="worker")  # fmt: skip


class Timeline:
    """When each node first showed each step of its update to ``target``, in seconds since
    ``start`` (the moment the pool's config was rendered)."""

    def __init__(self, nodes: list[str], target: str, start: float) -> None:
        self.target = target
        self.start = start
        self.seen: dict[str, dict[str, float]] = {n: {} for n in nodes}

    def see(self, node: str, a: Mapping[str, str], rebooted: bool, now: float) -> None:
        """One look at ``node``: its annotations ``a``, whether it rebooted since the start."""
        at, mark = now - self.start, self.seen[node].setdefault
        desired_drain = a.get(Annotation.DESIRED_DRAIN, "")
        if a.get(Annotation.DESIRED_CONFIG) == self.target:
            mark("targeted", at)
        if desired_drain.startswith("drain-"):
            mark("drain asked", at)
            if a.get(Annotation.LAST_APPLIED_DRAIN) == desired_drain:
                mark("drained", at)
        if a.get(Annotation.STATE) == "Working":
            mark("working", at)
        if rebooted:
            mark("rebooted", at)
        if (a.get(Annotation.CURRENT_CONFIG), a.get(Annotation.STATE)) == (self.target, "Done"):
            mark("done", at)

    def done(self) -> bool:
        return all("done" in steps for steps in self.seen.values())

    def line(self, what: str) -> str:
        """``what`` rollout to TARGET (s since it was rendered): {node: {step: s}}."""
        rounded = {n: {k: round(v, 1) for k, v in sorted(s.items(), key=lambda kv: kv[1])}
                   for n, s in self.seen.items()}  # fmt: skip
        return f"{what} rollout to {self.target} (s since it was rendered): {rounded}"
