"""Human-readable rendering of an ``UpdatePlan``: what changes, what it costs, and why."""

from __future__ import annotations

from mcd.model.disruption.policy import Action, ActionType
from mcd.model.osupdate.bootargs import GRUB_DROPIN
from mcd.model.osupdate.kargs import parse_kernel_arguments
from mcd.model.planning import applicability
from mcd.model.planning.applicability import GRUB, GRUBBY, RPM_OSTREE
from mcd.model.planning.diff import Changes
from mcd.model.planning.plan import UpdatePlan
from mcd.model.text import printable


def describe_action(a: Action) -> str:
    if a.type is ActionType.SPECIAL:
        return "Special (reload crio.service; drain only if the registries change is unsafe)"
    return str(a)


def describe_plan(plan: UpdatePlan) -> str:
    lines = [f"Update {plan.old.name} -> {plan.new.name}"]
    if plan.host is not None:
        lines.append(f"Node: {_host(plan)}")
    if not plan.reconcilable:
        lines += ["Reconcilable: no", f"Reason: {printable(plan.reason)}"]
        lines += [f"Not applicable: {printable(f.field)}: {f.why}" for f in plan.inapplicable]
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
    if plan.kernel_arguments and not plan.inapplicable:
        lines.append(f"Kernel arguments: {_kargs(plan)}")
    if plan.inapplicable:  # reconcilable: a root with no OS
        lines.append(
            f"Not applied: {applicability.skipped(plan.new.name, list(plan.inapplicable))}"
        )
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
    if plan.reboot:
        choice = plan.reboot_choice
        lines.append(f"Reboot kind: {choice.kind} ({choice.why})")
    lines.append(f"Cost: {plan.cost.label}")
    return "\n".join(lines) + "\n"


def _host(plan: UpdatePlan) -> str:
    host = plan.host
    assert host is not None
    image = host.os_image or "none"
    kargs = host.kernel_arguments or "none"
    systemd = f"systemd {host.systemd_version}" if host.systemd_version else "systemd unknown"
    name = printable(host.os) or "unknown OS"
    runtime = f"; container runtime: {host.container_runtime}" if host.container_runtime else ""
    return f"{name} (OS image: {image}; kernel arguments: {kargs}; {systemd}{runtime})"


def _kargs(plan: UpdatePlan) -> str:
    tool = plan.host.kernel_arguments if plan.host is not None else RPM_OSTREE
    new = " ".join(parse_kernel_arguments(plan.new.kernel_arguments)) or "(none)"
    if tool == GRUB:
        return f"GRUB drop-in {GRUB_DROPIN} then update-grub: {printable(new)}"
    if tool == GRUBBY:
        return f"grubby --update-kernel=ALL: {printable(new)}"
    return f"rpm-ostree kargs {' '.join(plan.kernel_arguments)}"


def _changes(title: str, c: Changes) -> list[str]:
    if not c:
        return []
    out = [f"{title}:"]
    out += [f"  + {printable(n)}" for n in c.added]
    out += [f"  ~ {printable(n)}" for n in c.changed]
    out += [f"  - {printable(n)}" for n in c.removed]
    return out
