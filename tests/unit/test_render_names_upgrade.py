"""Moving from mcd's old rendered-config names to upstream's: no fleet churn.

Before, mcd named a rendered config by a SHA-256 of its spec's canonical JSON; now it names
it as upstream's render controller does and stores the Ignition config in upstream's shape.
A pool already on a config the old mcd rendered from the same MachineConfigs stays on it
(nothing created, no node retargeted); the next real change gets upstream's name, and the
agent sees the reshaped config as the same one (no action, no reboot).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from mcd.model.ignition.goshape import go_shape
from mcd.model.machineconfig import machine_config_from_object
from mcd.model.planning.plan import make_plan
from mcd.model.pool.render import legacy_name, render, rendered_name
from tests.unit.test_controller_sync import mc, node, pool, sync

Obj = dict[str, Any]
UNIT = "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"
CONFIG = {
    "ignition": {"version": "3.4.0"},
    "storage": {"files": [{"path": "/etc/app.conf", "mode": 420,
                           "contents": {"source": "data:," + quote("a=1\n")}}]},
    "systemd": {"units": [{"name": "app.service", "enabled": True, "contents": UNIT}]},
}  # fmt: skip


def old_render(*configs: Obj) -> Obj:
    """The rendered config an mcd before this change stored: unshaped, SHA-256 named."""
    new = render("worker", list(configs))
    spec = dict(new.spec, config=_unshaped(new.spec["config"]))
    assert new.legacy == legacy_name("worker", spec)
    return {"metadata": {"name": new.legacy}, "spec": spec}


def _unshaped(config: Obj) -> Obj:
    files = [
        {"path": f["path"], "mode": f["mode"], "overwrite": f["overwrite"],
         "contents": {"source": f["contents"]["source"]}}
        for f in config["storage"]["files"]
    ]  # fmt: skip
    return {"ignition": {"version": "3.5.0"}, "storage": {"files": files},
            "systemd": config["systemd"]}  # fmt: skip


def test_a_pool_on_an_old_name_from_the_same_inputs_stays_there() -> None:
    configs = [mc("00-worker", config=CONFIG, kernelArguments=["a=1"])]
    old = old_render(*configs)
    p = pool(configuration={"name": old["metadata"]["name"]})
    nodes = [node("n1", old["metadata"]["name"]), node("n2", old["metadata"]["name"])]
    w, status = sync(p, [*configs, old], nodes)
    assert w.of("create") == [] and w.of("configuration") == [] and w.of("desired") == []
    assert (status["updatedMachineCount"], status["machineCount"]) == (2, 2)


def test_the_next_change_gets_upstreams_name_and_rolls_out() -> None:
    before = [mc("00-worker", config=CONFIG)]
    old = old_render(*before)
    p = pool(configuration={"name": old["metadata"]["name"]})
    after = [*before, mc("50-kargs", kernelArguments=["b=2"])]
    w, _status = sync(p, [*after, old], [node("n1", old["metadata"]["name"])])
    ((name, obj),) = w.of("create")
    assert name == rendered_name("worker", obj["spec"]) != legacy_name("worker", obj["spec"])
    assert obj["spec"]["config"] == go_shape(obj["spec"]["config"], omit_empty_structs=True)
    assert w.of("desired") == [("n1", name)]


def test_the_agent_sees_the_reshaped_config_as_the_same_one() -> None:
    configs = [mc("00-worker", config=CONFIG)]
    old = old_render(*configs)
    new = render("worker", configs)
    before = machine_config_from_object({**old, "metadata": {"name": "a"}}, "a")
    after = machine_config_from_object({"metadata": {"name": "b"}, "spec": new.spec}, "b")
    plan, same = make_plan(before, after), make_plan(before, before)
    assert plan.reconcilable and not plan.reboot and not plan.drain
    assert (plan.actions, plan.diff.categories(), plan.files, plan.units) == (
        same.actions, same.diff.categories(), same.files, same.units)  # fmt: skip
    assert plan.diff.categories() == []
