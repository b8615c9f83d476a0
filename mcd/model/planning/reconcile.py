"""May the node move from one config to the other while running? (upstream ``reconcilable``)

Rules and messages follow the upstream controller's ``isConfigReconcilable`` and
the daemon's FIPS check, in the same order, so the first failing rule gives the
same reason text as upstream.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcd.model import gate
from mcd.model.errors import ConfigError, UnreconcilableError
from mcd.model.ignition import validate
from mcd.model.ignition.config import FixedSections, IgnitionConfig, Passwd
from mcd.model.machineconfig import MachineConfig
from mcd.model.text import printable
from mcd.model.vocabulary import FORCE_FILE

SUPPORTED_EXTENSIONS = gate.SUPPORTED_EXTENSIONS
KERNEL_TYPES = gate.KERNEL_TYPES


@dataclass(frozen=True)
class StorageOverrides:
    """``MachineConfiguration.spec.irreconcilableValidationOverrides.storage``."""

    disks: bool = False
    filesystems: bool = False
    raid: bool = False


@dataclass(frozen=True)
class Overrides:
    storage: StorageOverrides = field(default_factory=StorageOverrides)


def check_reconcilable(
    old: MachineConfig,
    new: MachineConfig,
    overrides: Overrides | None = None,
    node_fips: bool | None = None,
) -> None:
    """Raise ``UnreconcilableError`` with the upstream reason, or return.

    ``node_fips`` is the node's ``/proc/sys/crypto/fips_enabled`` when known: the
    daemon compares the new config with the node, not with the old config.
    """
    detail = unreconcilable_detail(old, new, overrides or Overrides(), node_fips)
    if detail:
        raise UnreconcilableError(old.name, new.name, detail)


def check_diffable(old: MachineConfig, new: MachineConfig | None = None) -> None:
    """Upstream ``update()`` starts with ``newMachineConfigDiff``, whose Ignition parser
    validates the old config, then the new one: an invalid one fails the update
    (``Degraded``, not ``Unreconcilable``). A mode with special bits passes Ignition's
    parser; it is left to the reconcilability check, as upstream's ``ValidateIgnition``."""
    for which, mc in (("old", old), ("new", new)):
        if mc is None:
            continue
        special = validate.special_mode_problems(mc.ignition, "spec.config")
        problems = [p for p in validate.problems(mc.ignition, "spec.config") if p not in special]
        if problems:
            raise ConfigError(
                f"could not calculate config diff: parsing {which} Ignition config failed "
                "with error: " + "; ".join(problems)
            )


def unreconcilable_detail(
    old: MachineConfig, new: MachineConfig, overrides: Overrides, node_fips: bool | None
) -> str:
    problems = gate.problems(new)  # the one gate, in upstream's frame
    if problems:
        return gate.refusal(new.name, problems)
    passwd = _passwd_detail(old.ignition.passwd, new.ignition.passwd)
    detail = (
        (passwd and f"invalid passwd change(s): {passwd}")
        or _fixed_detail(old.ignition.fixed, new.ignition.fixed, overrides.storage)
        or _files_detail(new.ignition)
    )
    if detail:
        return detail
    fips_now = old.fips if node_fips is None else node_fips
    if new.fips != fips_now:
        return "detected change to FIPS flag; refusing to modify FIPS on a running cluster"
    return ""


def _passwd_detail(old: Passwd, new: Passwd) -> str:
    if old == new:
        return ""
    if old.groups != new.groups:
        return "ignition Passwd Groups section contains changes"
    if old.users == new.users:
        return ""
    for user in new.users:
        if user.name != "core":
            return "ignition passwd user section contains unsupported changes: non-core user"
    if new.users:
        last = new.users[-1]
        if last.other:
            return "SSH keys and password hash are not reconcilable"
        if last.name != "core" or not (last.password_hash or last.ssh_authorized_keys):
            return (
                "ignition passwd user section contains unsupported changes: "
                "user must be core and have 1 or more sshKeys"
            )
    return ""


def _fixed_detail(old: FixedSections, new: FixedSections, storage: StorageOverrides) -> str:
    if old.kernel_arguments != new.kernel_arguments:
        return "ignition kargs section contains changes"
    if old.disks != new.disks and not storage.disks:
        return "ignition disks section contains changes"
    if old.filesystems != new.filesystems and not storage.filesystems:
        return "ignition filesystems section contains changes"
    if old.raid != new.raid and not storage.raid:
        return "ignition raid section contains changes"
    if old.directories != new.directories:
        return "ignition directories section contains changes"
    if new.links not in (old.links, "[]"):
        return "ignition links section contains changes"
    return ""


def _files_detail(new: IgnitionConfig) -> str:
    for file in new.files:
        if file.append:
            return f"ignition file {printable(file.path)} includes append"
        if file.path == FORCE_FILE:
            return f"cannot create {FORCE_FILE} via Ignition"
    return ""
