"""Careless pools name themselves and nobody else stops: a bad nodeSelector, a node in two
custom pools, a window duration no timedelta holds, YAML aliases, a rendered config too large
for the API server, a change no node could apply. Each is a condition on the offending pool
while another pool in the same pass still targets its nodes."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcd.controller.sync import Snapshot, Syncer
from mcd.model.drain.settings import parse_timeout
from mcd.model.pool.checks import MAX_RENDERED_BYTES
from mcd.model.pool.hygiene import MESSAGE_LIMIT, cap, membership, selector_problem
from mcd.model.pool.render import ROLE_LABEL, render
from mcd.model.pool.rollout import condition, set_condition
from mcd.model.pool.windows import WINDOW_ANNOTATION, WindowError, parse_duration, parse_window
from mcd.model.vocabulary import Annotation
from tests.unit.test_controller_sync import NOW, Writer, mc

Obj = dict[str, Any]
ROLE = "node-role.kubernetes.io/"


def pool(name: str, node_selector: Any, annotations: dict[str, str] | None = None,
         configuration: str = "", roles: tuple[str, ...] = ("worker",)) -> Obj:  # fmt: skip
    spec: Obj = {
        "machineConfigSelector": {
            "matchExpressions": [{"key": ROLE_LABEL, "operator": "In", "values": list(roles)}]
        },
        "nodeSelector": node_selector,
        "maxUnavailable": 5,
    }
    if configuration:
        spec["configuration"] = {"name": configuration}
    return {"metadata": {"name": name, "uid": name, "generation": 1,
                         "annotations": annotations or {}}, "spec": spec}  # fmt: skip


def role(name: str) -> Obj:
    return {"matchLabels": {ROLE + name: ""}}


def node(name: str, config: str, *roles: str) -> Obj:
    return {"metadata": {"name": name, "labels": {ROLE + r: "" for r in roles},
                         "annotations": {Annotation.CURRENT_CONFIG: config,
                                         Annotation.DESIRED_CONFIG: config,
                                         Annotation.STATE: "Done"}}}  # fmt: skip


def infra_mc(name: str, **spec: Any) -> Obj:
    out = mc(name, **spec)
    out["metadata"]["labels"] = {ROLE_LABEL: "infra"}
    return out


OLD = render("worker", [mc("00-worker")])
OLD_OBJ = {"metadata": {"name": OLD.name}, "spec": OLD.spec}
NEW_MC = mc("50-new", kernelArguments=["b=2"])


def run_pass(
    pools: list[Obj], configs: list[Obj], nodes: list[Obj]
) -> tuple[Writer, dict[str, Obj]]:
    """One pass over every pool, as the controller runs it; the last status each pool got."""
    writer = Writer()
    writer.pools = {p["metadata"]["name"]: p for p in pools}
    alerts: list[dict[str, int]] = []
    syncer = Syncer(writer, "0.1.0", clock=lambda: NOW,  # type: ignore[arg-type]
                    observe_alerts=lambda a: alerts.append(dict(a)))  # fmt: skip
    snap = Snapshot(pools, {c["metadata"]["name"]: c for c in configs}, nodes)
    syncer.sync_all(snap)
    writer.alerts = alerts[-1] if alerts else {}  # type: ignore[attr-defined]
    return writer, dict(writer.of("status"))


def worker_rolls_out(w: Writer) -> bool:
    """The healthy ``worker`` pool moved on: its nodes got its new rendered config."""
    targets = {config for _name, config in w.of("desired")}
    return bool(targets) and all(
        t.startswith("rendered-worker-") and t != OLD.name for t in targets
    )


def cond(status: Obj, kind: str) -> Obj:
    found = condition(status["conditions"], kind)
    assert found is not None, f"no {kind} condition in {status['conditions']}"
    return dict(found)


# -- a nodeSelector the CRD accepts but no selector can use ------------------------------


@pytest.mark.parametrize(
    ("selector", "problem"),
    [
        ({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
         'invalid label selector: "Gt" is not a valid label selector operator'),
        ({"matchExpressions": [{"key": "a", "operator": "In"}]},
         "invalid label selector: values: Invalid value: []: for 'in', 'notin' operators, "
         "values set can't be empty"),
        ({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
         "invalid label selector: values: Invalid value: for 'exists', 'doesnotexist' "
         "operators, values set must be empty"),
        ({"matchLabels": ["a"]}, "invalid label selector: matchLabels: expected an object"),
        (role("infra"), ""),
        (None, ""),
    ],
)  # fmt: skip
def test_selector_problems_in_apimachinerys_words(selector: Any, problem: str) -> None:
    assert selector_problem(selector) == problem


def test_a_bad_selector_is_a_condition_on_its_pool_while_worker_rolls_out() -> None:
    bad = pool("infra", {"matchExpressions": [{"key": ROLE + "infra", "operator": "Gt"}]},
               roles=("worker", "infra"))  # fmt: skip
    worker = pool("worker", role("worker"), configuration=OLD.name)
    nodes = [node("w1", OLD.name, "worker"), node("w2", OLD.name, "worker", "infra")]
    w, statuses = run_pass([bad, worker], [mc("00-worker"), NEW_MC, OLD_OBJ], nodes)
    c = cond(statuses["infra"], "InvalidNodeSelector")
    assert c["status"] == "True" and c["reason"] == "InvalidLabelSelector"
    assert c["message"] == ('nodeSelector: invalid label selector: "Gt" is not a valid label '
                            "selector operator; no node is taken into this pool until it is fixed")  # fmt: skip
    assert ("InvalidNodeSelector", c["message"]) in w.of("event")
    assert sorted(n for n, _ in w.of("desired")) == ["w1", "w2"], "worker keeps both its nodes"
    assert worker_rolls_out(w)
    assert condition(statuses["worker"]["conditions"], "InvalidNodeSelector") is None


def test_a_fixed_selector_clears_the_condition() -> None:
    p = pool("infra", role("infra"), roles=("worker", "infra"))
    set_condition(p.setdefault("status", {}).setdefault("conditions", []), "InvalidNodeSelector",
                  True, "InvalidLabelSelector", "x", "then")  # fmt: skip
    _, statuses = run_pass([p], [mc("00-worker")], [node("i1", "", "infra")])
    assert cond(statuses["infra"], "InvalidNodeSelector")["status"] == "False"


# -- a node two custom pools select ----------------------------------------------------


def test_a_node_in_two_custom_pools_stays_put_and_both_pools_say_so() -> None:
    infra_old = render("infra", [mc("00-worker"), infra_mc("10-infra")])
    infra = pool("infra", role("infra"), configuration=infra_old.name, roles=("worker", "infra"))
    gpu = pool("gpu", role("gpu"), roles=("worker", "gpu"))
    worker = pool("worker", role("worker"), configuration=OLD.name)
    both = node("x1", infra_old.name, "worker", "infra", "gpu")
    nodes = [both, node("w1", OLD.name, "worker"), node("m1", "", "master", "infra")]
    configs = [mc("00-worker"), NEW_MC, infra_mc("10-infra"), OLD_OBJ,
               {"metadata": {"name": infra_old.name}, "spec": infra_old.spec}]  # fmt: skip
    master = pool("master", role("master"), roles=("master",))
    w, statuses = run_pass([infra, gpu, worker, master], configs, nodes)
    for name in ("infra", "gpu"):
        c = cond(statuses[name], "NodeInTwoPools")
        assert c["status"] == "True" and c["reason"] == "NodeInCustomPools"
        assert c["message"] == (
            "node x1 belongs to 2 custom roles, cannot proceed with this Node (pools gpu, "
            f"infra); it stays on {infra_old.name}"
        )
    assert "x1" not in {n for n, _ in w.of("desired")}, "its desiredConfig is left alone"
    assert statuses["infra"]["machineCount"] == 0
    assert worker_rolls_out(w)
    assert w.alerts == {"x1": 1, "w1": 0, "m1": 1}  # type: ignore[attr-defined]


@given(st.lists(st.sampled_from(["worker", "master", "a", "b", "c"]), max_size=5))
def test_membership_puts_a_node_in_at_most_one_pool(roles: list[str]) -> None:
    pools = [pool(r, role(r)) for r in ("worker", "master", "a", "b", "c")]
    found = membership(pools, [node("n", "", *roles)])
    homes = [p for p, members in found.members.items() if members]
    assert len(homes) <= 1
    custom = {r for r in roles if r not in ("worker", "master")}
    assert ("n" in found.conflicts) == (len(custom) > 1)


# -- maintenance windows: bounded in size and time, no aliases --------------------------


@pytest.mark.parametrize(
    "duration", ["99999999999999999999d", "999999999d999999999h", "9" * 5000 + "h"]
)
def test_a_duration_no_timedelta_holds_is_a_window_error(duration: str) -> None:
    with pytest.raises(WindowError) as e:
        parse_duration(duration)
    assert len(str(e.value)) < 300


@given(st.text(max_size=80))
def test_durations_parse_or_refuse_never_crash(text: str) -> None:
    try:
        value = parse_duration(text)
    except WindowError:
        return
    assert 0 < value.total_seconds() <= 7 * 86400


@given(st.text(max_size=80))
def test_drain_timeouts_parse_or_refuse_never_crash(text: str) -> None:
    try:
        seconds = parse_timeout(text)
    except ValueError as e:
        assert len(str(e)) < 200
        return
    assert 0 < seconds <= 7 * 86400


def _bomb(levels: int = 6) -> str:
    """A 300-byte window whose ``start`` expands to 9**levels items (2.6 MB of text at 6)."""
    names = [chr(97 + i) for i in range(levels)]
    lists = ["&a [x, x, x, x, x, x, x, x, x]"] + [
        f"&{n} [{', '.join(['*' + p] * 9)}]" for p, n in itertools.pairwise(names)
    ]
    return f"days: [Mon]\nrebootless: [{', '.join(lists)}]\nstart: *{names[-1]}\n"


BOMB = _bomb()


def test_yaml_aliases_are_refused_not_expanded() -> None:
    with pytest.raises(WindowError) as e:
        parse_window(BOMB)
    assert "aliases are not allowed" in str(e.value) and len(str(e.value)) < 400


def test_an_oversized_window_annotation_is_refused_unread() -> None:
    with pytest.raises(WindowError, match="longer than 4096 characters"):
        parse_window("{" + " " * 5000 + "}")


@given(st.text(max_size=300))
def test_window_text_parses_or_refuses_with_a_short_message(text: str) -> None:
    try:
        parse_window(text)
    except WindowError as e:
        assert len(str(e)) < 400


@pytest.mark.parametrize(
    "annotation",
    ['{"start": "02:00", "duration": "99999999999999999999d"}', BOMB,
     '{"start": "02:00", "duration": "' + "9" * 3000 + 'd"}'],
)  # fmt: skip
def test_a_careless_window_is_a_condition_on_its_pool_while_worker_rolls_out(
    annotation: str,
) -> None:
    careless = pool("infra", role("infra"), {WINDOW_ANNOTATION: annotation},
                    roles=("worker", "infra"))  # fmt: skip
    worker = pool("worker", role("worker"), configuration=OLD.name)
    nodes = [node("w1", OLD.name, "worker"), node("i1", "", "worker", "infra")]
    w, statuses = run_pass([careless, worker], [mc("00-worker"), NEW_MC, OLD_OBJ], nodes)
    c = cond(statuses["infra"], "MaintenanceWindow")
    assert c["status"] == "False" and c["reason"] == "InvalidWindow"
    assert c["message"].startswith(f"annotation {WINDOW_ANNOTATION}: ")
    assert len(c["message"]) < 400
    assert worker_rolls_out(w)


@given(st.text(min_size=0, max_size=20_000))
def test_every_condition_message_is_capped(message: str) -> None:
    conditions: list[Obj] = []
    set_condition(conditions, "X", True, "R", message, "now")
    assert len(conditions[0].get("message", "")) <= MESSAGE_LIMIT
    assert cap(message) == message or cap(message).endswith(" more characters)")


# -- render-time refusals ---------------------------------------------------------------


def big_mc(name: str, size: int) -> Obj:
    files = [{"path": f"/etc/{name}", "contents": {"source": "data:," + "a" * size}}]
    out = mc(name)
    out["metadata"]["labels"] = {ROLE_LABEL: "infra"}
    out["spec"]["config"] = {"ignition": {"version": "3.4.0"}, "storage": {"files": files}}
    return out


def test_a_rendered_config_too_large_to_store_names_the_configs_that_make_it() -> None:
    half = MAX_RENDERED_BYTES // 2 + 1000
    infra = pool("infra", role("infra"), roles=("worker", "infra"))
    worker = pool("worker", role("worker"), configuration=OLD.name)
    configs = [mc("00-worker"), NEW_MC, OLD_OBJ, big_mc("60-big-a", half), big_mc("61-big-b", half)]
    nodes = [node("w1", OLD.name, "worker"), node("i1", "", "worker", "infra")]
    w, statuses = run_pass([infra, worker], configs, nodes)
    c = cond(statuses["infra"], "RenderDegraded")
    assert c["status"] == "True"
    assert (
        "over the 1,400,000 bytes (1.34 MiB) the API server can store; largest MachineConfigs: "
        in c["message"]
    )
    assert "60-big-a (0.67 MiB), 61-big-b (0.67 MiB), " in c["message"]
    assert not any(n.startswith("rendered-infra-") for n, _ in w.of("create"))
    assert worker_rolls_out(w)


def test_a_change_no_node_could_apply_is_not_rendered_and_names_the_config() -> None:
    worker = pool("worker", role("worker"), configuration=OLD.name)
    infra_old = render("infra", [mc("00-worker"), infra_mc("10-infra")])
    infra = pool("infra", role("infra"), configuration=infra_old.name, roles=("worker", "infra"))
    configs = [mc("00-worker"), NEW_MC, OLD_OBJ, infra_mc("10-infra"),
               infra_mc("20-fips", fips=True),
               {"metadata": {"name": infra_old.name}, "spec": infra_old.spec}]  # fmt: skip
    nodes = [node("w1", OLD.name, "worker"), node("i1", infra_old.name, "worker", "infra")]
    w, statuses = run_pass([infra, worker], configs, nodes)
    c = cond(statuses["infra"], "RenderDegraded")
    assert c["message"] == (
        "Failed to render configuration for pool infra: could not generate rendered "
        f'MachineConfig: reconciliation failed between current config "{infra_old.name}" and '
        'base config "20-fips": detected change to FIPS flag; refusing to modify FIPS on a '
        "running cluster"
    )
    assert "infra" not in {p for p, _ in w.of("configuration")}, "infra keeps its target"
    assert "i1" not in {n for n, _ in w.of("desired")}
    assert worker_rolls_out(w)


def test_a_pool_whose_sync_raises_does_not_stop_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    broken = pool("infra", role("infra"), roles=("worker", "infra"))
    worker = pool("worker", role("worker"), configuration=OLD.name)
    real = Syncer.sync_pool

    def sync_pool(self: Syncer, p: Obj, snap: Snapshot) -> Any:
        if p["metadata"]["name"] == "infra":
            raise OverflowError("a bug")
        return real(self, p, snap)

    monkeypatch.setattr(Syncer, "sync_pool", sync_pool)
    w, _ = run_pass([broken, worker], [mc("00-worker"), NEW_MC, OLD_OBJ],
                    [node("w1", OLD.name, "worker")])  # fmt: skip
    assert worker_rolls_out(w)
