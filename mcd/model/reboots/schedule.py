"""Which of a pool's nodes whose OS asks for a reboot get a slot now, and why the others
wait. Pure: :func:`mcd.model.pool.rollout.plan_rollout` calls :func:`choose` with the nodes
that passed the same filters as an update's candidates (Ready and schedulable, the canary
wave, the maintenance window, the drain order) and the slots its updates left free, so that
``maxUnavailable`` counts updates and OS reboots together.

On top of those: ``osRebootInterval`` (one OS reboot at a time, the next that long after the
last one ended) and the policy's canary (its nodes reboot first; the others wait until every
canary node rebooted and soaked).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from mcd.model.reboots.policy import RebootPolicy
from mcd.model.reboots.requests import NodeReboot

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
NO_SLOT = "no free slot (maxUnavailable counts config updates and OS reboots together)"


@dataclass(frozen=True)
class RebootDemand:
    """A pool's OS reboots as the controller sees them in one pass."""

    policy: RebootPolicy = field(default_factory=RebootPolicy)
    nodes: Mapping[str, NodeReboot] = field(default_factory=dict)
    now: datetime = EPOCH
    canary: tuple[str, ...] = ()
    """The policy's canary nodes (they reboot first)."""
    soak: timedelta = timedelta(0)

    @property
    def wanted(self) -> frozenset[str]:
        """The nodes whose OS asks for a reboot and that have none under way."""
        if not self.policy.enabled:
            return frozenset()
        return frozenset(n for n, r in self.nodes.items() if r.wanted)

    def waiting(self, why: str) -> dict[str, str]:
        """Every wanted node, waiting for ``why``."""
        return dict.fromkeys(sorted(self.wanted), why)


def _time(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def _last_done(demand: RebootDemand, names: Sequence[str]) -> datetime | None:
    times = [t for n in names if (done := demand.nodes[n].done) and (t := _time(done.at))]
    return max(times, default=None)


def _at(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")


def choose(
    demand: RebootDemand, ordered: Sequence[str], spare: int, waits: Mapping[str, str]
) -> tuple[tuple[str, ...], dict[str, str]]:
    """The nodes to ask for their OS reboot now (of ``ordered``, the candidates in the
    order they may go), with ``spare`` slots; and why every other wanted node waits
    (``waits``: those the rollout's filters held already)."""
    out = dict(waits)
    eligible = [n for n in ordered if n in demand.nodes]
    pending = sorted(n for n, r in demand.nodes.items() if r.pending)
    interval = demand.policy.interval
    if interval and pending:
        why = f"OS reboot of {', '.join(pending[:3])} under way (osRebootInterval: one at a time)"
        return (), out | dict.fromkeys(eligible, why)
    if interval:
        last = _last_done(demand, list(demand.nodes))
        if last is not None and demand.now < last + timedelta(seconds=interval):
            until = last + timedelta(seconds=interval)
            why = f"osRebootInterval: the last OS reboot in the pool ended at {_at(last)}"
            return (), out | dict.fromkeys(eligible, f"{why}; next at {_at(until)}")
        spare = min(spare, 1)
    canary = [c for c in demand.canary if c in demand.nodes]
    first = [c for c in canary if demand.nodes[c].required is not None or demand.nodes[c].pending]
    if first:
        why = f"the canary's OS reboot first ({', '.join(first[:3])})"
        out |= {n: why for n in eligible if n not in canary}
        eligible = [n for n in eligible if n in canary]
    elif canary:
        last = _last_done(demand, canary)
        if last is not None and demand.now < last + demand.soak:
            why = f"the canary soaks after its OS reboot until {_at(last + demand.soak)}"
            out |= {n: why for n in eligible if n not in canary}
            eligible = [n for n in eligible if n in canary]
    chosen = tuple(eligible[: max(spare, 0)])
    out |= dict.fromkeys(eligible[len(chosen) :], NO_SLOT)
    for name in chosen:
        out.pop(name, None)
    return chosen, out
