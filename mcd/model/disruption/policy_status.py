"""The cluster's effective node disruption policies, as the operator publishes them.

The machine-config-operator merges the administrator's
``spec.nodeDisruptionPolicy`` over the defaults (``MergeClusterPolicies``) and
writes the result to the ``MachineConfiguration`` named ``cluster``,
``status.nodeDisruptionPolicyStatus.clusterPolicies``; the daemon reads only
that status (``calculatePostConfigChangeNodeDisruptionAction``), once
``status.observedGeneration`` has caught up with ``metadata.generation``.

The status carries no origin, so an entry is called ``default`` when it is
exactly one of upstream's defaults and ``user`` otherwise.
"""

from __future__ import annotations

from mcd.model import fields as f
from mcd.model.disruption.policy import (
    DEFAULT,
    DEFAULT_POLICIES,
    USER,
    Action,
    ActionType,
    DisruptionPolicies,
    FilePolicy,
    UnitPolicy,
)
from mcd.model.errors import ConfigError, PolicyError
from mcd.model.text import goquote

STATUS_TYPES = {t.value: t for t in ActionType}
NOT_UP_TO_DATE = "NodeDisruptionPolicyStatus is not up to date"


def status_ready(obj: f.JSONMap) -> bool:
    """``metadata.generation == status.observedGeneration`` (both 0 when unset)."""
    meta = f.opt_map(obj, "metadata", "")
    status = f.opt_map(obj, "status", "")
    generation = f.opt_int(meta, "generation", "metadata") or 0
    observed = f.opt_int(status, "observedGeneration", "status") or 0
    return generation == observed


def parse_status_policies(obj: object, source: str) -> DisruptionPolicies:
    """``status.nodeDisruptionPolicyStatus.clusterPolicies`` of a ``MachineConfiguration``."""
    try:
        doc = f.as_map(obj, "")
        path = "status.nodeDisruptionPolicyStatus.clusterPolicies"
        status = f.opt_map(doc, "status", "")
        ndp = f.opt_map(status, "nodeDisruptionPolicyStatus", "status")
        cp = f.opt_map(ndp, "clusterPolicies", "status.nodeDisruptionPolicyStatus")
        defaults_files = set(DEFAULT_POLICIES.files)
        defaults_units = set(DEFAULT_POLICIES.units)
        files = []
        for i, item in enumerate(f.opt_list(cp, "files", path)):
            ipath = f.join(f.join(path, "files"), i)
            entry = f.as_map(item, ipath)
            policy = FilePolicy(f.opt_str(entry, "path", ipath) or "", _actions(entry, ipath))
            files.append(policy if policy in defaults_files else _as_user(policy))
        units = []
        for i, item in enumerate(f.opt_list(cp, "units", path)):
            ipath = f.join(f.join(path, "units"), i)
            entry = f.as_map(item, ipath)
            unit = UnitPolicy(f.opt_str(entry, "name", ipath) or "", _actions(entry, ipath))
            units.append(
                unit if unit in defaults_units else UnitPolicy(unit.name, unit.actions, USER)
            )
        sshkey = _actions(f.opt_map(cp, "sshkey", path), f.join(path, "sshkey"))
        return DisruptionPolicies(
            files=tuple(files),
            units=tuple(units),
            sshkey=sshkey,
            sshkey_origin=DEFAULT if sshkey == DEFAULT_POLICIES.sshkey else USER,
            source=source,
        )
    except PolicyError:
        raise
    except ConfigError as e:
        raise PolicyError(e.detail, e.field) from e


def _as_user(policy: FilePolicy) -> FilePolicy:
    return FilePolicy(policy.path, policy.actions, USER)


def _actions(entry: f.JSONMap, path: str) -> tuple[Action, ...]:
    actions = []
    for i, item in enumerate(f.opt_list(entry, "actions", path)):
        apath = f.join(f.join(path, "actions"), i)
        obj = f.as_map(item, apath)
        raw = f.opt_str(obj, "type", apath) or ""
        kind = STATUS_TYPES.get(raw)
        if kind is None:
            raise PolicyError(f"unknown action type {goquote(raw)}", f.join(apath, "type"))
        service = None
        if kind in (ActionType.RELOAD, ActionType.RESTART):
            key = kind.value.lower()
            service = f.opt_str(f.opt_map(obj, key, apath), "serviceName", f.join(apath, key))
            if not service:
                raise PolicyError(f"{kind} requires {key}.serviceName", apath)
        actions.append(Action(kind, service))
    return tuple(actions)
