"""Node disruption policies: what a change to a file, unit or SSH key costs.

The defaults are the upstream cluster policies; an administrator's
``MachineConfiguration`` (``spec.nodeDisruptionPolicy``) is merged over them the
way upstream merges: an entry with the same path or unit name replaces the
default, other entries are appended, an SSH key policy replaces the default.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from enum import StrEnum

from mcd.model import fields as f
from mcd.model.errors import ConfigError, PolicyError
from mcd.model.text import goquote


class ActionType(StrEnum):
    REBOOT = "Reboot"
    DRAIN = "Drain"
    RELOAD = "Reload"
    RESTART = "Restart"
    DAEMON_RELOAD = "DaemonReload"
    NONE = "None"
    SPECIAL = "Special"


@dataclass(frozen=True)
class Action:
    type: ActionType
    service: str | None = None

    def __str__(self) -> str:
        return f"{self.type} {self.service}" if self.service else str(self.type)

    def to_json(self) -> dict[str, str]:
        out = {"type": str(self.type)}
        if self.service:
            out["service"] = self.service
        return out


REBOOT = Action(ActionType.REBOOT)
NONE = Action(ActionType.NONE)
DRAIN = Action(ActionType.DRAIN)
DAEMON_RELOAD = Action(ActionType.DAEMON_RELOAD)
SPECIAL = Action(ActionType.SPECIAL)


def reload(service: str) -> Action:
    return Action(ActionType.RELOAD, service)


def restart(service: str) -> Action:
    return Action(ActionType.RESTART, service)


DEFAULT = "default"
USER = "user"


@dataclass(frozen=True)
class FilePolicy:
    path: str
    actions: tuple[Action, ...]
    origin: str = DEFAULT
    """``default`` (upstream's cluster defaults) or ``user`` (the administrator's)."""


@dataclass(frozen=True)
class UnitPolicy:
    name: str
    actions: tuple[Action, ...]
    origin: str = DEFAULT


@dataclass(frozen=True)
class DisruptionPolicies:
    files: tuple[FilePolicy, ...] = ()
    units: tuple[UnitPolicy, ...] = ()
    sshkey: tuple[Action, ...] | None = None
    sshkey_origin: str = DEFAULT
    source: str = "the default cluster policies"
    """Where the policies were read from, for the plan's reader."""
    _prefixes: tuple[tuple[FilePolicy, str], ...] = field(
        init=False, compare=False, repr=False, default=()
    )
    """Each file policy with its cleaned path plus ``/`` (``IsSubdirectory``'s prefix),
    cleaned once here rather than for every file of every plan."""

    def __post_init__(self) -> None:
        prefixes = tuple((p, gopath_clean(p.path) + "/") for p in self.files)
        object.__setattr__(self, "_prefixes", prefixes)

    def closest_file_policy(self, path: str) -> FilePolicy | None:
        """Upstream ``FindClosestFilePolicyPathMatch``: the policy whose path equals ``path``
        or is a parent directory of it (``IsSubdirectory``), the longest winning; on a tie
        the first. A policy for ``/`` matches nothing: its cleaned form plus ``/`` is
        ``//``, as upstream."""
        best: FilePolicy | None = None
        target = gopath_clean(path)  # once per path, not once per policy
        for policy, prefix in self._prefixes:
            if (path == policy.path or target.startswith(prefix)) and (
                best is None or len(policy.path) > len(best.path)
            ):
                best = policy
        return best

    def unit_policy(self, name: str) -> UnitPolicy | None:
        for policy in self.units:
            if policy.name == name:
                return policy
        return None


def is_subdirectory(dir_path: str, target: str) -> bool:
    """Upstream ``IsSubdirectory``: ``Clean(dir) + "/"`` is a prefix of ``Clean(target)``."""
    return gopath_clean(target).startswith(gopath_clean(dir_path) + "/")


def gopath_clean(path: str) -> str:
    """Go's ``filepath.Clean`` (``posixpath.normpath`` keeps a leading ``//``)."""
    if not path:
        return "."
    clean = posixpath.normpath(path)
    return "/" + clean.lstrip("/") if clean.startswith("//") else clean


POLICY_KIND = "MachineConfiguration"


CRIO = "crio.service"
KUBELET = "kubelet.service"
UPDATE_CA_TRUST = "coreos-update-ca-trust.service"
IRI_REGISTRY = "iri-registry.service"

DEFAULT_POLICIES = DisruptionPolicies(
    files=(
        FilePolicy("/var/lib/kubelet/config.json", (NONE,)),
        FilePolicy("/etc/machine-config-daemon/no-reboot/containers-gpg.pub", (reload(CRIO),)),
        FilePolicy("/etc/containers/policy.json", (reload(CRIO),)),
        FilePolicy("/etc/containers/registries.conf", (SPECIAL,)),
        FilePolicy("/etc/containers/registries.d", (reload(CRIO),)),
        FilePolicy("/etc/crio/policies", (reload(CRIO),)),
        FilePolicy("/etc/nmstate/openshift", (NONE,)),
        FilePolicy(
            "/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt",
            (restart(UPDATE_CA_TRUST), restart(CRIO)),
        ),
        FilePolicy("/etc/kubernetes/credential-providers", (restart(KUBELET),)),
        FilePolicy(
            "/etc/systemd/system/kubelet.service.d/40-kubelet-crio-image-credential-provider.conf",
            (DAEMON_RELOAD, restart(KUBELET)),
        ),
        FilePolicy("/etc/iri-registry", (restart(IRI_REGISTRY),)),
        FilePolicy("/usr/local/bin/load-registry-image.sh", (restart(IRI_REGISTRY),)),
        FilePolicy("/etc/pki/ca-trust/source/anchors/iri-root-ca.crt", (restart(UPDATE_CA_TRUST),)),
    ),
    units=(UnitPolicy(IRI_REGISTRY, (DAEMON_RELOAD, restart(IRI_REGISTRY))),),
    sshkey=(NONE,),
)


def merge_policies(defaults: DisruptionPolicies, user: DisruptionPolicies) -> DisruptionPolicies:
    """Upstream ``MergeClusterPolicies``: each user entry replaces the first default with the
    same path or unit name, or is appended; a user SSH key policy replaces the default."""
    files = list(defaults.files)
    for policy in user.files:
        at = next((i for i, d in enumerate(defaults.files) if d.path == policy.path), None)
        if at is None:
            files.append(policy)
        else:
            files[at] = policy
    units = list(defaults.units)
    for upolicy in user.units:
        at = next((i for i, d in enumerate(defaults.units) if d.name == upolicy.name), None)
        if at is None:
            units.append(upolicy)
        else:
            units[at] = upolicy
    return DisruptionPolicies(
        files=tuple(files),
        units=tuple(units),
        sshkey=user.sshkey if user.sshkey else defaults.sshkey,
        sshkey_origin=USER if user.sshkey else defaults.sshkey_origin,
        source=user.source,
    )


SERVICE_TYPE = re.compile(
    r"\.(service|socket|device|mount|automount|swap|target|path|timer|snapshot|slice|scope)$"
)
SERVICE_NAME = re.compile(r"^[a-zA-Z0-9:._\\-]+\..")
MAX_SERVICE_NAME = 255


def service_name_problem(name: str) -> str:
    """The CRD's own rules for ``serviceName`` (openshift/api ``NodeDisruptionPolicyServiceName``),
    with its messages; empty when the name is valid."""
    if len(name) > MAX_SERVICE_NAME:
        return f"Too long: may not be more than {MAX_SERVICE_NAME} bytes"
    if not SERVICE_TYPE.search(name):
        return (
            "Invalid ${SERVICETYPE} in service name. Expected format is ${NAME}${SERVICETYPE}, "
            'where ${SERVICETYPE} must be one of ".service", ".socket", ".device", ".mount", '
            '".automount", ".swap", ".target", ".path", ".timer",".snapshot", ".slice" or ".scope".'
        )
    if not SERVICE_NAME.match(name):
        return (
            "Invalid ${NAME} in service name. Expected format is ${NAME}${SERVICETYPE}, where "
            "{NAME} must be atleast 1 character long and can only consist of alphabets, digits, "
            '":", "-", "_", ".", and "\\"'
        )
    return ""


USER_ACTION_TYPES = {t.value: t for t in ActionType if t is not ActionType.SPECIAL}


def parse_user_policies(doc: object, *, empty_actions: bool = False) -> DisruptionPolicies:
    """Read ``spec.nodeDisruptionPolicy`` of a ``MachineConfiguration`` (or the bare policy object).

    Enforces the API's own validation: known action types, a service name for
    Reload and Restart, Reboot and None standing alone, absolute paths. A document of
    another kind (a MachineConfig given by mistake) is refused, not read as no policy.
    An empty ``actions`` list is refused unless ``empty_actions`` (the CRD admits one, and
    upstream's operator publishes it as is; an empty SSH key policy means the default).
    """
    try:
        obj = f.as_map(doc, "")
        kind = obj.get("kind")
        if kind is not None and kind != POLICY_KIND:
            raise PolicyError(f"expected {POLICY_KIND}, got {goquote(str(kind))}", "kind")
        if kind is None and "spec" not in obj and "nodeDisruptionPolicy" not in obj:
            raise PolicyError(f"not a {POLICY_KIND}: no spec.nodeDisruptionPolicy")
        path = ""
        if "spec" in obj:
            obj, path = f.opt_map(obj, "spec", ""), "spec"
        ndp = f.opt_map(obj, "nodeDisruptionPolicy", path)
        npath = f.join(path, "nodeDisruptionPolicy")
        files = []
        for i, item in enumerate(f.opt_list(ndp, "files", npath)):
            ipath = f.join(f.join(npath, "files"), i)
            entry = f.as_map(item, ipath)
            fpath = f.opt_str(entry, "path", ipath)
            if fpath is None:  # the CRD requires it, but checks nothing else about it
                raise PolicyError("missing path", f.join(ipath, "path"))
            files.append(FilePolicy(fpath, _parse_actions(entry, ipath, empty_actions), USER))
        units = []
        for i, item in enumerate(f.opt_list(ndp, "units", npath)):
            ipath = f.join(f.join(npath, "units"), i)
            entry = f.as_map(item, ipath)
            name = f.opt_str(entry, "name", ipath)
            if not name:
                raise PolicyError("missing unit name", f.join(ipath, "name"))
            units.append(UnitPolicy(name, _parse_actions(entry, ipath, empty_actions), USER))
        sshkey = None
        if "sshkey" in ndp:
            spath = f.join(npath, "sshkey")
            sshkey = _parse_actions(f.opt_map(ndp, "sshkey", npath), spath, empty_actions) or None
        return DisruptionPolicies(
            files=tuple(files),
            units=tuple(units),
            sshkey=sshkey,
            sshkey_origin=USER,
            source="spec.nodeDisruptionPolicy merged over the default cluster policies",
        )
    except PolicyError:
        raise
    except ConfigError as e:
        raise PolicyError(e.detail, e.field) from e


def _parse_actions(entry: f.JSONMap, path: str, empty: bool = False) -> tuple[Action, ...]:
    actions = []
    for i, item in enumerate(f.opt_list(entry, "actions", path)):
        apath = f.join(f.join(path, "actions"), i)
        obj = f.as_map(item, apath)
        raw = f.opt_str(obj, "type", apath) or ""
        kind = USER_ACTION_TYPES.get(raw)
        if kind is None:
            raise PolicyError(
                f"unknown action type {goquote(raw)}; "
                f"expected one of {', '.join(USER_ACTION_TYPES)}",
                f.join(apath, "type"),
            )
        service = None
        if kind in (ActionType.RELOAD, ActionType.RESTART):
            key = kind.value.lower()
            service = f.opt_str(f.opt_map(obj, key, apath), "serviceName", f.join(apath, key))
            if not service:
                raise PolicyError(f"{kind} requires {key}.serviceName", apath)
            problem = service_name_problem(service)
            if problem:
                raise PolicyError(problem, f.join(f.join(apath, key), "serviceName"))
        actions.append(Action(kind, service))
    types = {a.type for a in actions}
    for alone in (ActionType.REBOOT, ActionType.NONE):
        if alone in types and len(actions) > 1:
            raise PolicyError(
                f"{alone} action can only be specified standalone", f.join(path, "actions")
            )
    if not actions and not empty:
        raise PolicyError("at least one action is required", f.join(path, "actions"))
    return tuple(actions)
