"""OS reboots through the pool's slots (issue 44 items 1 and 2): what the controller decides
from the Nodes' annotations and the pool's rollout policy, and what the agent's sentinel check
finds under a node root."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from mcd.controller.osreboots.preview import reboot_rows
from mcd.controller.osreboots.step import demand, describe, pool_policy
from mcd.host.checks.sentinel import reboot_required
from mcd.host.rootfs import Root
from mcd.model.pool.canary import POLICY_ANNOTATION, parse_policy
from mcd.model.pool.pools import NodeView
from mcd.model.pool.rollout import calculate_status, plan_rollout
from mcd.model.pool.windows import WindowState
from mcd.model.reboots.requests import (
    DONE_ANNOTATION,
    REQUESTED_ANNOTATION,
    REQUIRED_ANNOTATION,
    done_value,
    required_value,
)
from mcd.model.vocabulary import Annotation

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
SENTINEL = "/var/run/reboot-required"
Obj = dict[str, Any]


def node(name: str, config: str = "r2", desired: str | None = None, **ann: str) -> Obj:
    annotations = {
        Annotation.CURRENT_CONFIG: config,
        Annotation.DESIRED_CONFIG: desired or config,
        Annotation.STATE: "Done",
        **ann,
    }
    return {"metadata": {"name": name, "annotations": annotations,
                         "creationTimestamp": f"2026-01-0{name[-1]}T00:00:00Z"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}  # fmt: skip


def asks(since: str = "2026-11-27T10:00:00Z") -> dict[str, str]:
    return {REQUIRED_ANNOTATION: required_value(SENTINEL, since)}


def pool(policy: Obj | None, max_unavailable: object = 1) -> Obj:
    annotations = {POLICY_ANNOTATION: json.dumps(policy)} if policy is not None else {}
    return {"metadata": {"name": "worker", "annotations": annotations},
            "spec": {"configuration": {"name": "r2"}, "maxUnavailable": max_unavailable}}  # fmt: skip


def plan(p: Obj, nodes: list[Obj], now: datetime = NOW, **kw: Any) -> Any:
    views = [NodeView.of(n) for n in nodes]
    members = {n["metadata"]["name"]: n for n in nodes}
    return plan_rollout(p, views, reboots=demand(p, views, members, now), **kw)


def test_updates_and_os_reboots_share_max_unavailable() -> None:
    nodes = [node("n1", **asks()), node("n2", **asks()), node("n3", "r1"), node("n4", "r1")]
    r = plan(pool({"osReboots": True}, 2), nodes)
    assert r.targets == ("n3", "n4") and r.reboots == ()  # the updates first
    assert r.reboot_waits["n1"].startswith("no free slot (maxUnavailable counts config updates")
    nodes[2] = node("n3")  # one update done: one slot for an OS reboot
    r = plan(pool({"osReboots": True}, 2), nodes)
    assert r.targets == ("n4",) and r.reboots == ("n1",)
    assert set(r.reboot_waits) == {"n2"}


def test_a_requested_reboot_holds_a_slot_until_answered() -> None:
    asked = {**asks(), REQUESTED_ANNOTATION: "2026-11-27T11:00:00Z"}
    rebooting = node("n1", **asked)
    assert NodeView.of(rebooting).unavailable
    r = plan(pool({"osReboots": True}), [rebooting, node("n2", **asks()), node("n3", "r1")])
    assert r.targets == () and r.reboots == () and r.blocked == "capacity"
    r = plan(pool({"osReboots": True}, 2), [node("n1", "r1", **asked), node("n3", "r1")])
    assert r.targets == ("n3",), "no update while its OS reboot is under way"
    status = calculate_status(pool({"osReboots": True}), [NodeView.of(rebooting)], "now")
    assert status["unavailableMachineCount"] == 1
    updating = next(c for c in status["conditions"] if c["type"] == "Updating")
    assert (
        updating["message"]
        == "All nodes are updating to MachineConfig r2; OS reboot of n1 under way"
    )
    done = done_value(asked[REQUESTED_ANNOTATION], "2026-11-27T11:05:00Z")
    answered = node("n1", **{REQUESTED_ANNOTATION: asked[REQUESTED_ANNOTATION],
                             DONE_ANNOTATION: done})  # fmt: skip
    assert not NodeView.of(answered).unavailable
    r = plan(pool({"osReboots": True}), [answered, node("n2", **asks())])
    assert r.reboots == ("n2",)


def test_off_by_default_and_without_the_key() -> None:
    nodes = [node("n1", **asks())]
    assert plan(pool(None), nodes).reboots == ()
    assert plan(pool({"canary": 1}), nodes).reboots == ()
    text, rows = reboot_rows(pool(None), [NodeView.of(n) for n in nodes],
                             {"n1": nodes[0]}, NOW)  # fmt: skip
    assert text == 'not scheduled (the rollout policy has no "osReboots": true)'
    assert rows[0].line() == (
        f"n1: OS reboot not scheduled (asked by {SENTINEL} since 2026-11-27T10:00:00Z): "
        'the rollout policy has no "osReboots": true'
    )


def test_a_closed_window_paused_or_halted_pool_holds_them() -> None:
    nodes = [node("n1", **asks())]
    closed = WindowState(False, NOW + timedelta(hours=3), None)
    r = plan(pool({"osReboots": True}), nodes, window=closed)
    assert r.reboots == () and r.reboot_waits == {"n1": closed.describe()}
    r = plan(pool({"osReboots": True}), nodes, halted=True)
    assert r.reboot_waits == {"n1": "rollout halted (see RolloutHalted)"}
    paused = pool({"osReboots": True})
    paused["spec"]["paused"] = True
    assert plan(paused, nodes).reboot_waits == {"n1": "pool paused"}


def test_the_interval_spaces_reboots_one_at_a_time() -> None:
    p = pool({"osReboots": True, "osRebootInterval": "30m"}, 3)
    done = {REQUESTED_ANNOTATION: "r", DONE_ANNOTATION: done_value("r", "2026-11-27T11:50:00Z")}
    nodes = [node("n1", **done), node("n2", **asks()), node("n3", **asks())]
    r = plan(p, nodes)
    assert r.reboots == ()
    assert r.reboot_waits["n2"] == (
        "osRebootInterval: the last OS reboot in the pool ended at 2026-11-27T11:50:00+00:00; "
        "next at 2026-11-27T12:20:00+00:00"
    )
    r = plan(p, nodes, now=NOW + timedelta(minutes=21))
    assert r.reboots == ("n2",) and r.reboot_waits["n3"].startswith("no free slot")


def test_the_canary_reboots_first() -> None:
    p = pool({"osReboots": True, "canary": 1, "soak": "1h"}, 3)
    nodes = [node("n1", **asks()), node("n2", **asks()), node("n3", **asks())]
    r = plan(p, nodes)
    assert r.reboots == ("n1",)
    assert r.reboot_waits == dict.fromkeys(["n2", "n3"], "the canary's OS reboot first (n1)")
    nodes[0] = node("n1", **{REQUESTED_ANNOTATION: "r", DONE_ANNOTATION: done_value(
        "r", "2026-11-27T11:30:00Z")})  # fmt: skip
    assert plan(p, nodes).reboot_waits["n2"] == (
        "the canary soaks after its OS reboot until 2026-11-27T12:30:00+00:00"
    )
    assert plan(p, nodes, now=NOW + timedelta(hours=1)).reboots == ("n2", "n3")


def test_the_policy_keys_are_checked() -> None:
    assert parse_policy('{"osReboots": true, "osRebootInterval": "30m"}').max_unhealthy == 0
    policy, error = pool_policy(pool({"osReboots": "yes"}))
    assert not policy.enabled
    assert error == (f"annotation {POLICY_ANNOTATION}: osReboots: expected true or false, "
                     "got 'yes'")  # fmt: skip
    _, error = pool_policy(pool({"osReboots": True, "osRebootInterval": "soon"}))
    assert "osRebootInterval: expected a duration such as 90s, 30m or 1h" in error
    policy, _ = pool_policy(pool({"osReboots": True, "osRebootInterval": "1h"}))
    assert describe(policy, ["n1"], {"n2": "pool paused"}) == (
        "OS reboots scheduled, at least 1h apart; rebooting: n1; n2 waits: pool paused"
    )


def test_the_sentinel_file_under_the_root_and_the_command(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "var").mkdir()
    (tmp_path / "var/run").symlink_to("../run")
    root = Root(str(tmp_path))
    assert reboot_required(root) == ""
    (tmp_path / "run/reboot-required").write_text("")
    assert reboot_required(root) == SENTINEL  # through the host's own /var/run -> /run
    assert reboot_required(root, sentinel="") == ""
    flag = 'test -e "$MCD_ROOT/run/kernel-updated"'
    assert reboot_required(root, command=flag) == ""  # the command alone decides
    (tmp_path / "run/kernel-updated").write_text("")
    assert reboot_required(root, command=flag) == flag


@pytest.mark.parametrize("text", ["", "{", "[]", '{"source": 1}'])
def test_odd_annotations_read_as_no_wish(text: str) -> None:
    n = node("n1", **{REQUIRED_ANNOTATION: text})
    r = plan(pool({"osReboots": True}), [n])
    assert r.reboots == (("n1",) if text == '{"source": 1}' else ())
