"""Who may lead and which pools it paces (issue 40, item 7): the Lease in the install
namespace (never ``default``), no controller beside upstream's machine-config-controller, and
a pool written by the controller whose Lease it records only
(:mod:`mcd.controller.leadership.election`, :mod:`mcd.controller.leadership.pacer`, :mod:`mcd.cluster.lease`)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from mcd.cluster.api import ApiError
from mcd.cluster.lease import LeaseLock, upstream_controller
from mcd.controller.leadership.election import EXIT_UPSTREAM_RUNS, UpstreamGuard, install_namespace
from mcd.controller.leadership.pacer import PACER_ANNOTATION, Pacer

Obj = dict[str, Any]
NOW = datetime(2026, 11, 27, 20, 0, tzinfo=UTC)
DEPLOYMENT = (
    "/apis/apps/v1/namespaces/openshift-machine-config-operator/deployments/"
    "machine-config-controller"
)
UPSTREAM_LEASE = (
    "/apis/coordination.k8s.io/v1/namespaces/openshift-machine-config-operator/"
    "leases/machine-config-controller"
)


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Kube:
    """Answers GETs from ``objects`` (a status int: that error), records the rest."""

    def __init__(self, objects: dict[str, Obj | int] | None = None) -> None:
        self.objects = objects or {}
        self.writes: list[tuple[str, str, Any]] = []
        self.conflict = False

    def request(self, method: str, path: str, body: Any = None, **_: Any) -> Obj:
        if method != "GET":
            if self.conflict and method == "PATCH":
                raise ApiError(409, "Conflict", "the object has been modified")
            self.writes.append((method, path, body))
            if method == "PATCH":
                return {"metadata": {"name": path.rsplit("/", 1)[1], **body["metadata"]}}
            return body if isinstance(body, dict) else {}
        found = self.objects.get(path, 404)
        if isinstance(found, int):
            raise ApiError(found, "Error", path)
        return found


def test_the_lease_is_in_the_install_namespace_never_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    missing = str(tmp_path / "none")
    assert install_namespace("", missing) == "mcd"  # a laptop: the Deployment's namespace
    assert install_namespace("ops", missing) == "ops"
    sa = tmp_path / "namespace"
    sa.write_text("mcd-prod\n")
    assert install_namespace("", str(sa)) == "mcd-prod"  # in a pod
    monkeypatch.setenv("POD_NAMESPACE", "from-env")
    assert install_namespace("", str(sa)) == "from-env"
    assert install_namespace("ops", str(sa)) == "ops"


def lease(holder: str, renewed: datetime, duration: int = 137) -> Obj:
    return {"spec": {"holderIdentity": holder, "renewTime": stamp(renewed),
                     "leaseDurationSeconds": duration}}  # fmt: skip


def test_upstreams_controller_runs_while_its_deployment_is_scaled_up_or_its_lease_is_fresh() -> (
    None
):
    none = Kube()
    assert upstream_controller(none, NOW) == ""  # type: ignore[arg-type]  # neither exists
    scaled = Kube({DEPLOYMENT: {"spec": {}}})  # replicas defaults to 1
    assert (
        upstream_controller(scaled, NOW)  # type: ignore[arg-type]
        == "its Deployment openshift-machine-config-operator/machine-config-controller has "
        "1 replica(s)"
    )
    assert upstream_controller(Kube({DEPLOYMENT: {"spec": {"replicas": 0}}}), NOW) == ""  # type: ignore[arg-type]
    fresh = Kube({UPSTREAM_LEASE: lease("mcc_1", NOW - timedelta(seconds=100))})
    assert upstream_controller(fresh, NOW).startswith(  # type: ignore[arg-type]
        "its Lease openshift-machine-config-operator/machine-config-controller is held by mcc_1"
    )
    stale = Kube({UPSTREAM_LEASE: lease("mcc_1", NOW - timedelta(seconds=300))})
    assert upstream_controller(stale, NOW) == ""  # type: ignore[arg-type]  # crashed long ago
    released = Kube({UPSTREAM_LEASE: lease("", NOW)})
    assert upstream_controller(released, NOW) == ""  # type: ignore[arg-type]
    with pytest.raises(ApiError):
        upstream_controller(Kube({DEPLOYMENT: 403}), NOW)  # type: ignore[arg-type]


def test_a_lease_is_not_taken_while_upstream_runs_or_cannot_be_looked_for(
    caplog: pytest.LogCaptureFixture,
) -> None:
    kube = Kube({UPSTREAM_LEASE: lease("mcc_1", datetime.now(UTC))})
    guard = UpstreamGuard(kube)  # type: ignore[arg-type]
    lock = LeaseLock(kube, "mcd", "mcd-controller", "me")  # type: ignore[arg-type]
    lock.before_take = guard.may_lead
    assert not lock.try_acquire_or_renew()
    assert kube.writes == [] and "is held by mcc_1" in lock.refused and guard.runs
    with caplog.at_level(logging.ERROR):
        assert guard.stopping() == EXIT_UPSTREAM_RUNS == 78
    assert "mcd's controller does not run beside it" in caplog.text

    down = Kube({DEPLOYMENT: 503})  # the next look decides: no Lease, no exit
    guard = UpstreamGuard(down)  # type: ignore[arg-type]
    lock = LeaseLock(down, "mcd", "mcd-controller", "me")  # type: ignore[arg-type]
    lock.before_take = guard.may_lead
    assert not lock.try_acquire_or_renew() and down.writes == []
    assert guard.unknown and guard.runs == ""

    forbidden = UpstreamGuard(Kube({DEPLOYMENT: 403}))  # type: ignore[arg-type]
    assert "cannot tell whether it runs" in forbidden.may_lead() and forbidden.runs

    free = Kube()
    lock = LeaseLock(free, "mcd", "mcd-controller", "me")  # type: ignore[arg-type]
    lock.before_take = UpstreamGuard(free).may_lead  # type: ignore[arg-type]
    assert lock.try_acquire_or_renew() and free.writes[0][0] == "POST"


def test_a_look_is_due_every_interval() -> None:
    clock = [0.0]
    guard = UpstreamGuard(Kube(), every=30, clock=lambda: clock[0])  # type: ignore[arg-type]
    assert guard.due()
    guard.look()
    clock[0] = 29.0
    assert not guard.due()
    clock[0] = 30.0
    assert guard.due()


class Writer:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, bool]] = []

    def event(self, pool: Obj, reason: str, message: str, warning: bool = False) -> None:
        self.events.append((pool["metadata"]["name"], reason, message, warning))


def pool(name: str, pacer: str = "", rv: str = "5") -> Obj:
    notes = {PACER_ANNOTATION: pacer} if pacer else {}
    return {"metadata": {"name": name, "resourceVersion": rv, "annotations": notes}}


OTHER = "/apis/coordination.k8s.io/v1/namespaces/default/leases/mcd-controller"


def test_a_pool_is_claimed_with_its_version_and_another_controllers_pool_is_left_alone() -> None:
    kube, writer = Kube({OTHER: lease("laptop_9", datetime.now(UTC), 15)}), Writer()
    pacer = Pacer(kube, writer, "mcd/mcd-controller")  # type: ignore[arg-type]
    pools, paced, claimed = pacer.sort([pool("worker"), pool("infra", "default/mcd-controller"),
                                        pool("master", "mcd/mcd-controller")])  # fmt: skip
    assert paced == {"worker", "master"} and claimed == {"worker"}
    assert kube.writes == [("PATCH", "/apis/machineconfiguration.openshift.io/v1/"
                            "machineconfigpools/worker", {"metadata": {
                                "resourceVersion": "5",
                                "annotations": {PACER_ANNOTATION: "mcd/mcd-controller"}}})]  # fmt: skip
    assert pools[0]["metadata"]["annotations"][PACER_ANNOTATION] == "mcd/mcd-controller"
    refused = [e for e in writer.events if e[1] == "PacedElsewhere"]
    assert refused == [("infra", "PacedElsewhere", (
        "Pool infra is paced by the controller of Lease default/mcd-controller (held by "
        "laptop_9); this controller (Lease mcd/mcd-controller) does not write it. To hand it "
        "over: stop that controller, then start this one with --take-over-from "
        "default/mcd-controller, or remove the record: kubectl annotate machineconfigpool "
        f"infra {PACER_ANNOTATION}-"), True)]  # fmt: skip
    # prune: only the rendered configs of the pools it paces
    assert pacer.mine({"metadata": {"name": "rendered-master-1"}})
    assert not pacer.mine({"metadata": {"name": "rendered-infra-1"}})
    assert not pacer.mine({"metadata": {"name": "rendered-gone-1"}})  # not while one is refused
    pacer.sort([pool("infra", "default/mcd-controller")])
    assert len([e for e in writer.events if e[1] == "PacedElsewhere"]) == 1, "once, not a pass"


def test_of_two_racing_for_a_pool_the_loser_writes_nothing() -> None:
    kube, writer = Kube(), Writer()
    kube.conflict = True  # the other controller's record came first
    pacer = Pacer(kube, writer, "mcd/mcd-controller")  # type: ignore[arg-type]
    _, paced, claimed = pacer.sort([pool("worker")])
    assert paced == set() and claimed == set() and writer.events == []
    assert pacer.refused == {"worker": "(being recorded)"}


def test_a_take_over_waits_until_the_other_lease_is_not_held() -> None:
    clock = [0.0]
    held = lease("laptop_9", datetime.now(UTC), 15)
    kube, writer = Kube({OTHER: held}), Writer()
    pacer = Pacer(kube, writer, "mcd/mcd-controller", ["default/mcd-controller"],  # type: ignore[arg-type]
                  clock=lambda: clock[0])  # fmt: skip
    recorded = [pool("worker", "default/mcd-controller")]
    assert pacer.sort(recorded)[1] == set()  # held (first sight of its record)
    clock[0] = 10.0
    assert pacer.sort(recorded)[1] == set()  # unchanged for 10 s of its 15
    clock[0] = 16.0
    _, paced, claimed = pacer.sort(recorded)  # unchanged for its whole duration: expired
    assert paced == claimed == {"worker"}
    taken = [e[2] for e in writer.events if e[1] == "PacerRecorded"]
    assert taken == ["Pool worker: taken over from the controller of Lease "
                     "default/mcd-controller (its Lease expired (held by laptop_9); "
                     "--take-over-from default/mcd-controller): now paced by Lease "
                     "mcd/mcd-controller"]  # fmt: skip
    # a Lease that is gone, or released, is taken over at once; one never named, never
    gone = Pacer(Kube(), Writer(), "mcd/mcd-controller", ["default/mcd-controller"])  # type: ignore[arg-type]
    assert gone.sort(recorded)[1] == {"worker"}
    never = Pacer(Kube(), Writer(), "mcd/mcd-controller")  # type: ignore[arg-type]
    assert never.sort(recorded)[1] == set()
    forbidden = Pacer(Kube({OTHER: 403}), Writer(), "mcd/mcd-controller",  # type: ignore[arg-type]
                      ["default/mcd-controller"])  # fmt: skip
    assert forbidden.sort(recorded)[1] == set(), "never on a guess"


def test_a_take_over_names_a_lease_as_namespace_slash_name(tmp_path: Path) -> None:
    from click.testing import CliRunner  # noqa: PLC0415

    from mcd.cli.pools import controller_command  # noqa: PLC0415

    missing = str(tmp_path / "kubeconfig")
    for value in ("mcd-controller", "a/b/c", "/mcd-controller"):
        done = CliRunner().invoke(controller_command,
                                  ["--take-over-from", value, "--kubeconfig", missing])  # fmt: skip
        assert done.exit_code == 64
        assert f"--take-over-from: {value!r} is not NAMESPACE/NAME" in done.output
