"""Rollouts that stop and go on (issue 30): several controller passes over cached objects with
an injected clock and the writes recorded (no API server). A rollout a maintenance window or
a halt stops resumes with the nodes left and never touches a Done node again; the estimate of
completion (``mcd_pool_rollout_estimated_completion_timestamp_seconds``) is within 25% on a
replayed rollout."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

from mcd.controller.metrics import PoolRollout, pool_rollout
from mcd.controller.sync import PoolReport, Snapshot, Syncer
from mcd.model.pool.canary import HALT_ANNOTATION, POLICY_ANNOTATION
from mcd.model.pool.render import render
from mcd.model.pool.rollout import condition
from mcd.model.pool.windows import WINDOW_ANNOTATION
from mcd.model.vocabulary import Annotation
from tests.unit.test_controller_sync import Writer, mc, node, pool

Obj = dict[str, Any]


class Fleet:
    """A pool of nodes whose agents finish an update when the test says so."""

    def __init__(self, count: int, **spec: Any) -> None:
        self.old = render("worker", [mc("00-worker")])
        self.configs = [mc("00-worker"), mc("50-new", kernelArguments=["b=2"]),
                        {"metadata": {"name": self.old.name}, "spec": self.old.spec}]  # fmt: skip
        self.pool = pool(configuration={"name": self.old.name}, **spec)
        self.nodes = {f"n{i}": node(f"n{i}", self.old.name) for i in range(count)}
        for i, n in enumerate(self.nodes.values()):
            n["metadata"]["creationTimestamp"] = f"2026-01-01T00:00:{i:02}Z"
        self.writer = Writer()
        self.writer.pools["worker"] = self.pool
        self.now = datetime(2026, 11, 23, 2, 0, tzinfo=UTC)
        self.syncer = Syncer(self.writer, "0.1.0", clock=lambda: self.now)  # type: ignore[arg-type]
        self.targeted: list[tuple[str, datetime]] = []

    def annotate(self, key: str, value: str | None) -> None:
        notes = self.writer.pools["worker"]["metadata"]["annotations"]
        if value is None:
            notes.pop(key, None)
        else:
            notes[key] = value

    def sync(self) -> PoolReport:
        p = self.writer.pools["worker"]
        configs = {c["metadata"]["name"]: c for c in self.configs}
        before = len(self.writer.of("desired"))
        report = self.syncer.sync_pool(p, Snapshot([p], configs, list(self.nodes.values())))
        self.writer.pools["worker"] = {**self.writer.pools["worker"], "status": report.status}
        for name, config in self.writer.of("desired")[before:]:
            self.nodes[name]["metadata"]["annotations"][Annotation.DESIRED_CONFIG] = config
            self.nodes[name]["metadata"]["annotations"][Annotation.STATE] = "Working"
            self.targeted.append((name, self.now))
        return report

    def finish(self, name: str) -> None:
        notes = self.nodes[name]["metadata"]["annotations"]
        notes[Annotation.CURRENT_CONFIG] = notes[Annotation.DESIRED_CONFIG]
        notes[Annotation.STATE] = "Done"

    def working(self) -> list[str]:
        return [n for n, o in self.nodes.items()
                if o["metadata"]["annotations"][Annotation.STATE] == "Working"]  # fmt: skip


def test_a_rollout_across_two_windows_resumes_with_the_nodes_left() -> None:
    """A 25-minute window at 02:00 every day, a pass every 10 minutes, an update a pass
    long: three nodes go in the first window, none while it is closed (the third finishes),
    the other three in the next one; no node is targeted twice."""
    fleet = Fleet(6)
    window = {"start": "02:00", "duration": "25m", "timeZone": "UTC"}
    fleet.annotate(WINDOW_ANNOTATION, json.dumps(window))
    for _day in range(2):
        for _ in range(6 * 24):
            for name in fleet.working():
                fleet.finish(name)
            fleet.sync()
            fleet.now += timedelta(minutes=10)
    names = [n for n, _at in fleet.targeted]
    assert names == ["n0", "n1", "n2", "n3", "n4", "n5"]  # each once, in order
    hours = [(at.day, at.strftime("%H:%M")) for _n, at in fleet.targeted]
    assert hours == [(23, "02:00"), (23, "02:10"), (23, "02:20"),
                     (24, "02:00"), (24, "02:10"), (24, "02:20")]  # fmt: skip
    assert all(o["metadata"]["annotations"][Annotation.CURRENT_CONFIG] != fleet.old.name
               for o in fleet.nodes.values())  # fmt: skip


def test_a_halted_rollout_resumes_with_the_nodes_left() -> None:
    fleet = Fleet(4)
    fleet.annotate(POLICY_ANNOTATION, '{"maxUnhealthy": 0}')
    fleet.sync()  # n0
    fleet.finish("n0")
    fleet.sync()  # n1
    fleet.nodes["n1"]["metadata"]["annotations"][Annotation.STATE] = "Degraded"
    report = fleet.sync()
    assert report.rollout.blocked == "halted"
    assert fleet.writer.pools["worker"]["metadata"]["annotations"][HALT_ANNOTATION]
    fleet.nodes["n1"]["metadata"]["annotations"][Annotation.STATE] = "Working"
    fleet.finish("n1")
    for _ in range(3):
        assert fleet.sync().rollout.targets == ()  # recovered, but halted until someone looks
    fleet.annotate(HALT_ANNOTATION, None)
    while fleet.working() or len(fleet.targeted) < 4:
        for name in fleet.working():
            fleet.finish(name)
        fleet.sync()
    assert [n for n, _at in fleet.targeted] == ["n0", "n1", "n2", "n3"]


def test_the_estimate_of_completion_is_within_a_quarter_on_a_replayed_rollout() -> None:
    """Twelve nodes, maxUnavailable 2, each update 8 to 12 minutes (seeded), a pass a
    minute. From the third node done on, every estimated completion is within 25% of the
    rollout's real duration off the real completion."""
    rng = random.Random(30)
    fleet = Fleet(12, maxUnavailable=2)
    start = fleet.now
    due: dict[str, datetime] = {}
    figures: PoolRollout | None = None
    estimates: list[tuple[datetime, float]] = []
    while True:
        for name in fleet.working():
            if name not in due:
                due[name] = fleet.now + timedelta(minutes=rng.uniform(8, 12))
            if fleet.now >= due[name]:
                fleet.finish(name)
        report = fleet.sync()
        members = list(fleet.nodes.values())
        figures = pool_rollout(report, fleet.writer.pools["worker"]["spec"]["configuration"]
                               ["name"], members, {}, figures, fleet.now.timestamp())  # fmt: skip
        if figures.nodes_left == 0:
            break
        if figures.eta is not None:  # the pool's status says the same as the metric
            when = datetime.fromtimestamp(figures.eta, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            progress = condition(report.status["conditions"], "RolloutProgress") or {}
            assert str(progress.get("message")).startswith(f"estimated completion {when} (")
        if figures.eta is not None and figures.updated_since_start >= 3:
            estimates.append((fleet.now, figures.eta))
        fleet.now += timedelta(minutes=1)
    done = fleet.now.timestamp()
    assert estimates and fleet.now - start > timedelta(minutes=50)
    total = done - start.timestamp()  # the estimated duration against the real one
    worst = max(abs(eta - done) / total for _at, eta in estimates)
    assert worst <= 0.25, worst


def test_an_invalid_policy_is_one_condition_naming_the_field_and_holds_the_pool() -> None:
    fleet = Fleet(2)
    fleet.annotate(POLICY_ANNOTATION, '{"canary": 1, "soak": "a while"}')
    report = fleet.sync()
    assert report.rollout.targets == () and report.rollout.blocked == "halted"
    policy = condition(report.status["conditions"], "RolloutPolicy") or {}
    assert (policy.get("status"), policy.get("reason")) == ("False", "InvalidPolicy")
    assert str(policy.get("message")).startswith(
        "annotation mcd-project.github.io/rollout-policy: soak: expected a duration such as "
        "90m, 4h or 1h30m, got 'a while'; the pool is halted until it is fixed"
    )
    fleet.annotate(POLICY_ANNOTATION, '{"canary": 1, "soak": "1h"}')
    report = fleet.sync()
    assert report.rollout.targets == ("n0",)
    policy = condition(report.status["conditions"], "RolloutPolicy") or {}
    assert (policy.get("status"), policy.get("message")) == (
        "True", "canary: 1 node, soak 1h, halt past 0 unhealthy updated nodes")  # fmt: skip
    canary = condition(report.status["conditions"], "Canary") or {}
    assert (canary.get("status"), canary.get("reason")) == ("False", "Waiting")
    halted = condition(report.status["conditions"], "RolloutHalted") or {}
    assert (halted.get("status"), halted.get("reason")) == ("False", "Resumed")
