"""Human-readable rendering of an ``UpdatePlan``: what changes, what it costs, and why."""

from __future__ import annotations

from mcd.model.disruption.policy import Action, ActionType
from mcd.model.planning.diff import Changes
from mcd.model.planning.plan import UpdatePlan
from mcd.model.text import printable


def describe_action(a: Action) -> str:
    if a.type is ActionType.SPECIAL:
        return "Special (reload crio.service; drain only if the registries change is unsafe)"
    return str(a)


def describe_plan(plan: UpdatePlan) -> str:
    lines = [f"Update {plan.old.name} -> {plan.new.name}"]
    if not plan.reconcilable:
        lines += ["Reconcilable: no", f"Reason: {printable(plan.reason)}"]
        return "\n".join(lines) + "\n"
    lines.append("Reconcilable: yes")
    changed = plan.diff.categories()
    lines.append(f"Changes: {', '.join(changed) if changed else 'none'}")
    if plan.force:
        lines.append("Force file present: validation skipped, OS update and reboot forced")
    lines += _changes("Files", plan.files)
    lines += _changes("Units", plan.units)
    if plan.diff.os_changes:
        lines.append(f"OS: {plan.diff.os_changes_string()}")
    if plan.kernel_arguments:
        lines.append(f"Kernel arguments: rpm-ostree kargs {' '.join(plan.kernel_arguments)}")
    lines.append(
        f"Policies: {plan.policy_source}" if plan.policy_source else "Policies: legacy action table"
    )
    lines.append("Why:")
    for d in plan.decisions:
        acts = ", ".join(describe_action(a) for a in d.actions)
        lines.append(f"  {printable(d.subject)}: {d.rule} -> {acts}")
    lines.append(f"Actions: {', '.join(describe_action(a) for a in plan.actions)}")
    lines.append(f"Drain: {'yes' if plan.drain else 'no'} ({plan.drain_reason})")
    lines.append(f"Reboot: {'yes' if plan.reboot else 'no'}")
    lines.append(f"Cost: {plan.cost.label}")
    return "\n".join(lines) + "\n"


def _changes(title: str, c: Changes) -> list[str]:
    if not c:
        return []
    out = [f"{title}:"]
    out += [f"  + {printable(n)}" for n in c.added]
    out += [f"  ~ {printable(n)}" for n in c.changed]
    out += [f"  - {printable(n)}" for n in c.removed]
    return out
