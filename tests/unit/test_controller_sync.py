"""One controller pass over cached objects, with the writes recorded (no API server):
what a user sees on the pool for a render error, an edited rendered config, an invalid
window, an empty selector, and the writes a rollout makes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from mcd.controller.sync import Snapshot, Syncer, drain_timeouts
from mcd.model.planning.reconcile import Overrides
from mcd.model.pool.render import ROLE_LABEL, render
from mcd.model.pool.rollout import condition
from mcd.model.pool.windows import WINDOW_ANNOTATION
from mcd.model.vocabulary import Annotation

Obj = dict[str, Any]
NOW = datetime(2026, 11, 23, 4, 0, tzinfo=UTC)


class Writer:
    """Records every write as the controller would send it; answers like the server."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self.pools: dict[str, Obj] = {}
        self.overrides = Overrides()

    def irreconcilable_overrides(self) -> Overrides:
        return self.overrides

    def create_config(self, obj: Obj) -> Obj | None:
        self.calls.append(("create", obj["metadata"]["name"], obj))
        return obj

    def set_configuration(
        self, pool: str, configuration: Obj, annotations: dict[str, str | None] | None = None
    ) -> Obj:
        self.calls.append(("configuration", pool, configuration))
        updated = dict(self.pools[pool])
        updated["spec"] = {**updated["spec"], "configuration": configuration}
        if annotations:
            self._annotate(updated, annotations)
        self.pools[pool] = updated
        return updated

    def set_pool_annotation(self, pool: str, key: str, value: str | None) -> Obj:
        self.calls.append(("annotation", pool, (key, value)))
        updated = dict(self.pools[pool])
        self._annotate(updated, {key: value})
        self.pools[pool] = updated
        return updated

    @staticmethod
    def _annotate(obj: Obj, annotations: dict[str, str | None]) -> None:
        meta = dict(obj.get("metadata") or {})
        current = dict(meta.get("annotations") or {})
        for key, value in annotations.items():
            if value is None:
                current.pop(key, None)
            else:
                current[key] = value
        meta["annotations"] = current
        obj["metadata"] = meta

    pinned_sets: list[Obj] | None = None  # None: no PinnedImageSet API (plain Kubernetes)

    def pinned_image_sets(self) -> list[Obj] | None:
        return self.pinned_sets

    def set_pinned_image_sets(self, pool: str, refs: list[Obj] | None) -> Obj:
        self.calls.append(("pinnedImageSets", pool, refs))
        updated = dict(self.pools[pool])
        updated["spec"] = {**updated["spec"], "pinnedImageSets": refs}
        self.pools[pool] = updated
        return updated

    def set_status(self, pool: str, status: Obj) -> Obj:
        self.calls.append(("status", pool, status))
        return {**self.pools[pool], "status": status}

    def set_desired(
        self, node: str, config: str, taints: list[Any] | None = None, resource_version: str = ""
    ) -> Obj:
        self.calls.append(("desired", node, config))
        if taints is not None:
            self.calls.append(("taints", node, taints))
        return {"metadata": {"name": node, "annotations": {Annotation.DESIRED_CONFIG: config}}}

    def release(self, node: str, config: str, mark: str) -> Obj:
        self.calls.append(("release", node, (config, mark)))
        return {"metadata": {"name": node, "annotations": {
            Annotation.CURRENT_CONFIG: "", Annotation.DESIRED_CONFIG: config}}}  # fmt: skip

    def set_taints(self, node: str, taints: list[Any], resource_version: str) -> Obj:
        self.calls.append(("taints", node, taints))
        return {"metadata": {"name": node, "resourceVersion": resource_version},
                "spec": {"taints": taints}}  # fmt: skip

    def event(self, pool: Obj, reason: str, message: str, warning: bool = False) -> None:
        self.calls.append(("event", reason, message))

    def of(self, kind: str) -> list[tuple[str, Any]]:
        return [(name, value) for k, name, value in self.calls if k == kind]


def mc(name: str, **spec: Any) -> Obj:
    return {"metadata": {"name": name, "labels": {ROLE_LABEL: "worker"}},
            "spec": {"config": {"ignition": {"version": "3.4.0"}}, **spec}}  # fmt: skip


def pool(**spec: Any) -> Obj:
    return {
        "metadata": {"name": "worker", "uid": "u1", "generation": 1, "annotations": {}},
        "spec": {
            "machineConfigSelector": {"matchLabels": {ROLE_LABEL: "worker"}},
            "nodeSelector": {"matchLabels": {"node-role.kubernetes.io/worker": ""}},
            **spec,
        },
    }


def node(name: str, config: str) -> Obj:
    return {"metadata": {"name": name, "labels": {"node-role.kubernetes.io/worker": ""},
                         "annotations": {Annotation.CURRENT_CONFIG: config,
                                         Annotation.DESIRED_CONFIG: config,
                                         Annotation.STATE: "Done"}}}  # fmt: skip


def sync(p: Obj, configs: list[Obj], nodes: list[Obj]) -> tuple[Writer, Obj]:
    writer = Writer()
    writer.pools["worker"] = p
    syncer = Syncer(writer, "0.1.0", clock=lambda: NOW)  # type: ignore[arg-type]
    snap = Snapshot([p], {c["metadata"]["name"]: c for c in configs}, nodes)
    report = syncer.sync_pool(p, snap)
    return writer, report.status


def test_first_pass_renders_points_the_pool_and_reports() -> None:
    w, status = sync(pool(), [mc("00-worker", kernelArguments=["a=1"])], [])
    ((name, obj),) = w.of("create")
    assert name.startswith("rendered-worker-")
    assert obj["metadata"]["ownerReferences"][0]["uid"] == "u1"
    assert w.of("configuration") == [("worker", {"name": name, "source": [
        {"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
         "name": "00-worker"}]})]  # fmt: skip
    events = w.of("event")
    assert ("RenderedConfigGenerated", f"{name} successfully generated (release version: "
            ", controller version: 0.1.0)") in events  # fmt: skip
    assert ("Updating", f"Pool worker now targeting MachineConfig {name}") in events
    rd = condition(status["conditions"], "RenderDegraded")
    assert rd is not None and rd["status"] == "False"


def test_a_render_error_is_render_degraded_and_the_target_stays() -> None:
    good = render("worker", [mc("00-worker")])
    p = pool(configuration={"name": good.name})
    bad = mc("10-bad", kernelType="fast")
    w, status = sync(p, [mc("00-worker"), bad], [node("n1", good.name)])
    assert w.of("create") == [] and w.of("configuration") == [] and w.of("desired") == []
    rd = condition(status["conditions"], "RenderDegraded")
    assert rd is not None and rd["status"] == "True"
    assert rd["message"] == ("Failed to render configuration for pool worker: could not generate "
                             "rendered MachineConfig: kernelType=fast is invalid")  # fmt: skip
    degraded = condition(status["conditions"], "Degraded")
    assert degraded is not None and degraded["status"] == "True"
    assert w.of("status"), "the condition is written"


def test_an_edited_rendered_config_is_never_overwritten() -> None:
    good = render("worker", [mc("00-worker")])
    edited = {"metadata": {"name": good.name}, "spec": {**good.spec, "fips": True}}
    w, status = sync(pool(), [mc("00-worker"), edited], [])
    assert w.of("create") == []
    rd = condition(status["conditions"], "RenderDegraded")
    assert rd is not None and "was changed after it was created" in rd["message"]


def test_a_rollout_writes_desired_config_and_the_status_counts_it() -> None:
    old = render("worker", [mc("00-worker")])
    p = pool(maxUnavailable=2, configuration={"name": old.name})
    nodes = [node(f"n{i}", old.name) for i in range(3)]
    configs = [mc("00-worker"), mc("50-new", kernelArguments=["b=2"]),
               {"metadata": {"name": old.name}, "spec": old.spec}]  # fmt: skip
    w, status = sync(p, configs, nodes)
    ((new, _),) = w.of("create")
    assert w.of("desired") == [("n0", new), ("n1", new)]
    assert ("SetDesiredConfig", f"Set target for 2 nodes to MachineConfig: {new}") in w.of("event")
    assert (status["machineCount"], status["unavailableMachineCount"]) == (3, 2)


def test_an_invalid_window_holds_disruptive_updates_and_says_why() -> None:
    old = render("worker", [mc("00-worker")])
    p = pool(configuration={"name": old.name})
    p["metadata"]["annotations"][WINDOW_ANNOTATION] = (
        '{"start": "02:00", "duration": "4h", "timeZone": "Mars/Olympus"}'
    )
    configs = [mc("00-worker"), mc("50-new", kernelArguments=["b=2"]),
               {"metadata": {"name": old.name}, "spec": old.spec}]  # fmt: skip
    w, status = sync(p, configs, [node("n0", old.name)])
    assert w.of("desired") == []
    mw = condition(status["conditions"], "MaintenanceWindow")
    assert mw is not None and (mw["status"], mw["reason"]) == ("False", "InvalidWindow")
    assert mw["message"] == ("annotation mcd-project.github.io/maintenance-window: timeZone: "
                             "unknown time zone; updates that drain or reboot are held")  # fmt: skip


def test_an_empty_node_selector_is_refused() -> None:
    p = pool()
    p["spec"]["nodeSelector"] = {}
    w, _ = sync(p, [mc("00-worker")], [node("n0", "x")])
    assert w.of("desired") == []
    assert ("SelectingAll", "This machineconfigpool is selecting all nodes. A non-empty "
            "selector is required.") in w.of("event")  # fmt: skip


def test_nodes_waiting_for_the_target_carry_upstreams_update_taint() -> None:
    old = render("worker", [mc("00-worker")])
    p = pool(maxUnavailable=1, configuration={"name": old.name})
    nodes = [node(f"n{i}", old.name) for i in range(3)]
    nodes[2]["spec"] = {"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]}
    configs = [mc("00-worker"), mc("50-new", kernelArguments=["b=2"]),
               {"metadata": {"name": old.name}, "spec": old.spec}]  # fmt: skip
    w, _ = sync(p, configs, nodes)
    taint = {"key": "UpdateInProgress", "effect": "PreferNoSchedule"}
    dedicated = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
    ((new, _),) = w.of("create")
    # every node left waiting gets the taint; the one targeted in this pass never gets it
    assert w.of("taints") == [("n1", [taint]), ("n2", [dedicated, taint])]
    assert w.of("desired") == [("n0", new)]
    # next pass: n0 is targeted, so its taint goes; the others keep theirs
    nodes[0]["metadata"]["annotations"][Annotation.DESIRED_CONFIG] = new
    nodes[0]["spec"] = {"taints": [taint]}
    nodes[1]["spec"] = {"taints": [taint]}
    p["spec"]["configuration"] = {"name": new, "source": [
        {"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig", "name": n}
        for n in ("00-worker", "50-new")]}  # fmt: skip
    w, _ = sync(p, configs, nodes)
    assert w.of("taints") == [("n0", []), ("n2", [{"key": "dedicated", "value": "db",
                                                   "effect": "NoSchedule"}, taint])]  # fmt: skip


def test_a_blocked_drain_and_the_drain_timeout_are_the_pools_conditions() -> None:
    """What the drain controller says holds each node goes into ``DrainBlocked`` (only the
    pool's own nodes), with a Warning Event when it starts or changes; ``DrainTimeout`` shows
    the pool's setting, or names the annotation when it cannot be used; both go away or turn
    False when there is nothing to say."""
    good = render("worker", [mc("00-worker")])
    configs, nodes = [mc("00-worker")], [node("n1", good.name), node("n2", good.name)]
    why = "apps/web-0: blocked by PodDisruptionBudget apps/web-pdb: The disruption budget ..."
    blocked = {"n1": why, "elsewhere": "x/y: blocked"}
    p = pool(configuration={"name": good.name})
    p["metadata"]["annotations"] = {"mcd-project.github.io/drain-timeout": "2 hours"}
    writer = Writer()
    writer.pools["worker"] = p
    syncer = Syncer(writer, "0.1.0", clock=lambda: NOW, drain_blocked=lambda: blocked)  # type: ignore[arg-type]
    status = syncer.sync_pool(p, Snapshot([p], {"00-worker": configs[0]}, nodes)).status
    drain = condition(status["conditions"], "DrainBlocked")
    assert drain is not None and (drain["status"], drain["reason"]) == ("True", "EvictionBlocked")
    assert drain["message"] == f"1 node(s) cannot be drained: node n1: {why}"
    assert ("DrainBlocked", drain["message"]) in writer.of("event")
    timeout = condition(status["conditions"], "DrainTimeout")
    assert timeout is not None
    assert (timeout["status"], timeout["reason"]) == ("False", "InvalidDrainTimeout")
    assert timeout["message"] == (
        "annotation mcd-project.github.io/drain-timeout: expected a duration such as 90m, 2h "
        "or 1h30m, got '2 hours'; the default 1h0m0s applies"
    )

    # the next pass: nothing blocks any more, the annotation is gone
    p = {**p, "status": status, "metadata": {**p["metadata"], "annotations": {}}}
    writer.pools["worker"] = p
    blocked.clear()
    writer.calls.clear()
    status = syncer.sync_pool(p, Snapshot([p], {"00-worker": configs[0]}, nodes)).status
    drain = condition(status["conditions"], "DrainBlocked")
    assert drain is not None and (drain["status"], drain["message"]) == (
        "False", "no drain is blocked")  # fmt: skip
    assert condition(status["conditions"], "DrainTimeout") is None
    assert not [e for e in writer.of("event") if e[0] == "DrainBlocked"]


def test_a_pool_that_never_had_a_blocked_drain_has_no_such_condition() -> None:
    good = render("worker", [mc("00-worker")])
    _, status = sync(pool(configuration={"name": good.name}), [mc("00-worker")],
                     [node("n1", good.name)])  # fmt: skip
    assert condition(status["conditions"], "DrainBlocked") is None
    assert condition(status["conditions"], "DrainTimeout") is None


def test_each_node_gets_its_primary_pools_drain_timeout() -> None:
    worker = pool()
    worker["metadata"]["annotations"] = {"mcd-project.github.io/drain-timeout": "90m"}
    infra = pool()
    infra["metadata"] = {"name": "infra", "annotations": {}}
    infra["spec"] = {**infra["spec"],
                     "nodeSelector": {"matchLabels": {"node-role.kubernetes.io/infra": ""}}}  # fmt: skip
    n1, n2 = node("n1", "c"), node("n2", "c")
    n2["metadata"]["labels"]["node-role.kubernetes.io/infra"] = ""
    assert drain_timeouts(Snapshot([worker, infra], {}, [n1, n2])) == {"n1": 5400.0, "n2": 3600.0}
