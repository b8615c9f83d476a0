"""What the fault matrix needs around one node: the three update kinds, a supervisor that
plays systemd and the machine (restart a killed agent, perform requested reboots), and the
checks every cell makes (no torn file, no lost desiredConfig change)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import urllib3

from mcd.cluster.api import ApiError
from mcd.host.ondisk.validation import validate_on_disk
from mcd.host.rootfs import Root
from mcd.host.runner import Runner
from mcd.host.systemd.offline import OfflineSystemd
from mcd.model.machineconfig import machine_config_from_object
from mcd.model.vocabulary import Annotation
from tests.builders import file_entry
from tests.e2e.configs import KEY_B, worker
from tests.e2e.harness import IMAGE_A, IMAGE_B, AgentNode, create_config
from tests.fakes.kubecluster import TestCluster
from tests.patience import patient

Obj = dict[str, Any]

# The three updates every fault is tried against.
KINDS = ("rebootless", "reboot", "os")


POLICY_JSON = "/etc/containers/policy.json"


def policy(variant: int = 0) -> list[Obj]:
    """crio's signature policy: a change is applied with a crio reload (D-Bus ReloadUnit)."""
    text = '{"default":[{"type":"insecureAcceptAnything"}],"v":' + str(variant) + "}\n"
    return [file_entry(POLICY_JSON, text)]


def base_doc(name: str) -> Obj:
    return worker(name, extra_files=policy())


def target_doc(kind: str, name: str, variant: int = 1) -> Obj:
    """The new config of an update of ``kind``; ``variant`` 2 is a second, different one."""
    if kind == "rebootless":  # signature policy, pull secret, SSH key: crio reload only
        secret = '{"auths":{"r' + str(variant) + '.example.com":{"auth":"bmV3"}}}'
        key = KEY_B if variant == 1 else KEY_B + "2"
        return worker(name, secret=secret, key=key, extra_files=policy(variant))
    if kind == "reboot":  # a file with no disruption policy: drain and reboot
        return worker(name, app=f"threads={8 * variant}\n", extra_files=policy())
    return worker(name, image=IMAGE_B if variant == 1 else IMAGE_A + "9",
                  kargs=["nosmt"] if variant == 1 else ["nosmt", "mitigations=off"],
                  extra_files=policy())  # fmt: skip


@dataclass
class Supervisor:
    """Plays the host around the agent: systemd restarts it when it dies (``Restart=always``),
    and the machine reboots when the agent asks systemd for the reboot unit."""

    node: AgentNode
    reboots: int = 0
    restarts: int = 0
    states: list[tuple[str, str, str]] = field(default_factory=list)  # (state, current, reason)

    def tick(self) -> Obj | None:
        """One round; the Node's annotations, or None while the API server is away."""
        node = self.node
        if node.reboots_requested() > self.reboots:
            self.reboots = node.reboots_requested()
            node.reboot()
        elif not node.running:
            self.restarts += 1
            node.start()
        try:
            a = node.annotations()
        except (ApiError, OSError, urllib3.exceptions.HTTPError):
            return None  # the API server is down (a restart under test): look again later
        seen = (a.get(Annotation.STATE, ""), a.get(Annotation.CURRENT_CONFIG, ""),
                a.get(Annotation.REASON, ""))  # fmt: skip
        if not self.states or self.states[-1] != seen:
            self.states.append(seen)
        return a

    def until(self, check: Callable[[Obj], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + patient(timeout)
        while time.monotonic() < deadline:
            a = self.tick()
            if a is not None and check(a):
                return
            time.sleep(0.05)
        raise AssertionError(
            f"timed out after {timeout}s waiting for {what}; states seen: {self.states}\n"
            f"--- agent log (tail) ---\n{self.node.log()[-5000:]}"
        )

    def done_on(self, name: str, timeout: float = 90.0) -> None:
        def check(a: Obj) -> bool:
            return (
                a.get(Annotation.STATE) == "Done"
                and a.get(Annotation.CURRENT_CONFIG) == name
                and a.get(Annotation.DESIRED_CONFIG) == name
            )

        self.until(check, timeout, f"Done on {name}")

    def degraded_with(self, reason: str, timeout: float = 60.0) -> None:
        self.until(
            lambda a: a.get(Annotation.STATE) == "Degraded" and a.get(Annotation.REASON) == reason,
            timeout,
            f"Degraded with reason {reason!r}",
        )


def assert_exactly_on(node: AgentNode, doc: Obj) -> None:
    """Every file, unit and key of ``doc`` is on disk whole (no torn file, no temp file left)."""
    root = Root(node.root)
    report = validate_on_disk(machine_config_from_object(doc), root, OfflineSystemd(root, Runner()))
    assert report.ok, report.reasons()
    leftovers = [p for p in node.root.rglob("*") if ".mcd-tmp" in p.name]
    assert not leftovers, f"temporary files left: {leftovers}"


def new_config(cluster: TestCluster, kind: str, base: str, variant: int = 1) -> tuple[str, Obj]:
    name = cluster.name(base)
    doc = target_doc(kind, name, variant)
    create_config(cluster, doc)
    return name, doc
