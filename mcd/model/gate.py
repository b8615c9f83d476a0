"""The one gate: every check a config must pass before anything writes (pure).

Every command that writes runs it first, on the config it is about to apply:
``once-from``, each update of ``mcd start`` (through the reconcilability check,
which puts upstream's frame around the same words), ``firstboot-complete-
machineconfig`` and ``restore`` (the node's own ``currentconfig`` or
``--config``). The same refusal reads the same wherever it comes from:

    validating new Ignition config from machineconfig "NAME" failed: FIELD: PROBLEM; ...

It covers Ignition's own rules (:mod:`mcd.model.ignition.validate`: paths as Ignition
defines them, modes, owners and their range, contents decoded streamed and
bounded, units and dropins), the guards on where a file may go
(:mod:`mcd.model.ignition.guards`), values the OS cannot take
(:mod:`mcd.model.ignition.values`), and kernel arguments the boot loader would drop or
misparse (:func:`mcd.model.osupdate.kargs.boot_loader_problem`). What depends on the node
(its symlinks, read-only ``/usr`` on ostree, owners by name) is judged by the host right
after, on the paths as they resolve inside the root.
"""

from __future__ import annotations

from mcd.model.errors import ConfigValidationError
from mcd.model.ignition import validate
from mcd.model.ignition.values import control_problem, spec_value_problems
from mcd.model.machineconfig import MachineConfig
from mcd.model.osupdate.imagemode import argument_problem
from mcd.model.osupdate.kargs import boot_loader_problem
from mcd.model.text import goquote

SUPPORTED_EXTENSIONS = (
    "two-node-ha", "ipsec", "usbguard", "kerberos",
    "kernel-devel", "sandboxed-containers", "sysstat",
)  # fmt: skip
KERNEL_TYPES = ("", "default", "realtime", "64k-pages")


class GateError(ConfigValidationError):
    """The config did not pass the gate; ``str()`` is the full refusal."""

    def __init__(self, name: str, problems: list[str]) -> None:
        super().__init__(problems)
        self.name = name
        self.reason = refusal(name, problems)
        self.args = (self.reason,)

    def __str__(self) -> str:
        return self.reason


def problems(mc: MachineConfig) -> list[str]:
    """Every problem of ``mc``, each naming its field; empty when it may be applied."""
    return validate.problems(mc.ignition, "spec.config") + spec_problems(mc)


def spec_problems(mc: MachineConfig) -> list[str]:
    found = []
    if mc.kernel_type not in KERNEL_TYPES:
        found.append(
            f"spec.kernelType: invalid kernelType {goquote(mc.kernel_type)}; "
            "must be one of default, realtime, 64k-pages"
        )
    invalid = [e for e in mc.extensions if e not in SUPPORTED_EXTENSIONS]
    if invalid:
        found.append(f"spec.extensions: invalid extensions found: [{' '.join(invalid)}]")
    found.extend(spec_value_problems(mc.os_image_url, mc.kernel_arguments, mc.extensions))
    found.extend(_kernel_argument_problems(mc.kernel_arguments))
    # osImageURL's control characters are reported above; what else would go on a
    # command line after mcd's own transport is refused for both images
    if mc.os_image_url and not control_problem(mc.os_image_url):
        found.extend(_image_problem("spec.osImageURL", mc.os_image_url))
    found.extend(
        _image_problem("spec.baseOSExtensionsContainerImage", mc.base_os_extensions_container_image)
    )
    return found


def _kernel_argument_problems(entries: tuple[str, ...]) -> list[str]:
    """What the node's boot loader would drop or misparse, per entry (control characters are
    reported by :func:`spec_value_problems`)."""
    found = []
    for i, entry in enumerate(entries):
        bad = None if control_problem(entry) else boot_loader_problem(entry)
        if bad:
            found.append(
                f"spec.kernelArguments[{i}]: invalid kernel argument {goquote(entry)}: {bad}"
            )
    return found


def _image_problem(field: str, image: str) -> list[str]:
    bad = argument_problem(image) if image else None
    return [f"{field}: invalid image reference {goquote(image)}: {bad}"] if bad else []


def refusal(name: str, found: list[str]) -> str:
    return f"validating new Ignition config from machineconfig {goquote(name)} failed: " + (
        "; ".join(found)
    )


def admit(mc: MachineConfig) -> None:
    """Raise :class:`GateError` unless ``mc`` passes the gate."""
    found = problems(mc)
    if found:
        raise GateError(mc.name, found)
