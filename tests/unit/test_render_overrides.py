"""The render's reconcilability check honours ``MachineConfiguration.spec.
irreconcilableValidationOverrides`` (upstream's ``generateAndValidateRenderedMachineConfig``):
a change the cluster allows is rendered and rolled out; one it does not stays
``RenderDegraded`` and the pool keeps its target."""

from __future__ import annotations

from typing import Any

from mcd.cluster.api import ApiError
from mcd.controller.rendering import OVERRIDES_FRESH
from mcd.controller.sync import Snapshot, Syncer
from mcd.model.planning.reconcile import Overrides, StorageOverrides
from mcd.model.pool.render import render
from tests.unit.test_controller_sync import NOW, Writer, mc
from tests.unit.test_pool_hygiene import cond, infra_mc, node, pool, role

Obj = dict[str, Any]
DISK = {"device": "/dev/sdb", "wipeTable": True}
RAID = {"name": "md0", "level": "raid1", "devices": ["/dev/sdc", "/dev/sdd"]}


def storage_mc(name: str, **storage: Any) -> Obj:
    return infra_mc(name, config={"ignition": {"version": "3.4.0"}, "storage": storage})


def passes(overrides: Overrides, extra: Obj, rounds: int = 1) -> tuple[Writer, Obj, str]:
    """The infra pool on its current config, plus ``extra``; the last status after
    ``rounds`` passes; the rendered name it would move to."""
    old = render("infra", [mc("00-worker"), infra_mc("10-infra")])
    infra = pool("infra", role("infra"), configuration=old.name, roles=("worker", "infra"))
    configs = [mc("00-worker"), infra_mc("10-infra"), extra,
               {"metadata": {"name": old.name}, "spec": old.spec}]  # fmt: skip
    new = render("infra", [mc("00-worker"), infra_mc("10-infra"), extra])
    writer = Writer()
    writer.pools = {"infra": infra}
    writer.overrides = overrides
    syncer = Syncer(writer, "0.1.0", clock=lambda: NOW)  # type: ignore[arg-type]
    snap = Snapshot([infra], {c["metadata"]["name"]: c for c in configs},
                    [node("i1", old.name, "worker", "infra")])  # fmt: skip
    for _ in range(rounds):
        syncer.sync_all(snap)
    return writer, dict(writer.of("status"))["infra"], new.name


def test_a_disk_change_the_cluster_allows_is_rendered_and_targeted() -> None:
    allowed = Overrides(storage=StorageOverrides(disks=True))
    w, status, new = passes(allowed, storage_mc("30-disk", disks=[DISK]))
    assert cond(status, "RenderDegraded")["status"] == "False"
    assert new in {n for n, _ in w.of("create")}
    assert dict(w.of("configuration"))["infra"]["name"] == new


def test_a_disk_change_without_its_override_stays_render_degraded() -> None:
    w, status, new = passes(Overrides(), storage_mc("30-disk", disks=[DISK]))
    c = cond(status, "RenderDegraded")
    assert c["status"] == "True"
    assert "ignition disks section contains changes" in c["message"]
    assert '"30-disk"' in c["message"]
    assert not w.of("configuration") and new not in {n for n, _ in w.of("create")}


def test_an_override_for_another_section_does_not_allow_this_one() -> None:
    other = Overrides(storage=StorageOverrides(disks=True))
    w, status, _new = passes(other, storage_mc("30-raid", raid=[RAID]))
    c = cond(status, "RenderDegraded")
    assert c["status"] == "True" and "raid" in c["message"].lower()
    assert not w.of("configuration")


def test_an_override_added_after_a_refusal_is_read_again_and_renders() -> None:
    _w, status, new = passes(Overrides(), storage_mc("30-disk", disks=[DISK]))
    assert cond(status, "RenderDegraded")["status"] == "True"
    old = render("infra", [mc("00-worker"), infra_mc("10-infra")])
    infra = pool("infra", role("infra"), configuration=old.name, roles=("worker", "infra"))
    configs = [mc("00-worker"), infra_mc("10-infra"), storage_mc("30-disk", disks=[DISK]),
               {"metadata": {"name": old.name}, "spec": old.spec}]  # fmt: skip
    now = [0.0]
    writer = Writer()
    writer.pools = {"infra": infra}
    syncer = Syncer(writer, "0.1.0", clock=lambda: NOW)  # type: ignore[arg-type]
    assert syncer.render_step is not None
    syncer.render_step.clock = lambda: now[0]
    snap = Snapshot([infra], {c["metadata"]["name"]: c for c in configs},
                    [node("i1", old.name, "worker", "infra")])  # fmt: skip
    syncer.sync_all(snap)
    writer.overrides = Overrides(storage=StorageOverrides(disks=True))  # the admin allows it
    now[0] = OVERRIDES_FRESH - 1
    syncer.sync_all(snap)
    assert not writer.of("configuration"), "read again only after OVERRIDES_FRESH seconds"
    now[0] = OVERRIDES_FRESH + 1
    syncer.sync_all(snap)
    assert dict(writer.of("configuration"))["infra"]["name"] == new
    assert cond(dict(writer.of("status"))["infra"], "RenderDegraded")["status"] == "False"


class Forbidden(Writer):
    def irreconcilable_overrides(self) -> Overrides:
        raise ApiError(403, "Forbidden", "machineconfigurations.operator.openshift.io is forbidden")


def test_overrides_that_may_not_be_read_allow_nothing() -> None:
    """A controller without the right to read MachineConfiguration refuses as without it."""
    old = render("infra", [mc("00-worker"), infra_mc("10-infra")])
    infra = pool("infra", role("infra"), configuration=old.name, roles=("worker", "infra"))
    configs = [mc("00-worker"), infra_mc("10-infra"), storage_mc("30-disk", disks=[DISK]),
               {"metadata": {"name": old.name}, "spec": old.spec}]  # fmt: skip
    writer = Forbidden()
    writer.pools = {"infra": infra}
    Syncer(writer, "0.1.0", clock=lambda: NOW).sync_all(  # type: ignore[arg-type]
        Snapshot(
            [infra],
            {c["metadata"]["name"]: c for c in configs},
            [node("i1", old.name, "worker", "infra")],
        )
    )
    assert cond(dict(writer.of("status"))["infra"], "RenderDegraded")["status"] == "True"
    assert not writer.of("configuration")
