"""The model's error tree.

``ConfigError`` is the root of everything a bad config can cause; callers that
show errors to users catch only it. ``UnreconcilableError`` is kept apart: the
config is well-formed but the change cannot be applied to a running node.
"""

from __future__ import annotations

from mcd.model.text import goquote


class ConfigError(Exception):
    """A MachineConfig, Ignition config or policy could not be used.

    ``field`` is the dotted location of the problem (``spec.config.storage.files[2].mode``),
    empty when the problem concerns the document as a whole.
    """

    def __init__(self, message: str, field: str = "") -> None:
        self.field = field
        self.detail = message
        super().__init__(f"{field}: {message}" if field else message)


class ConfigParseError(ConfigError):
    """The document is not YAML/JSON, or a field has the wrong type or shape."""


class UnsupportedVersionError(ConfigParseError):
    """The Ignition spec version is not one mcd understands."""


class ConfigValidationError(ConfigError):
    """The config parsed but breaks an Ignition or MachineConfig rule.

    ``problems`` lists every problem found, each already naming its field.
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(problems))


class DecodeError(ConfigError):
    """A file's contents (data URL, compression) cannot be decoded."""


class PolicyError(ConfigError):
    """A node disruption policy document is malformed."""


class UnreconcilableError(Exception):
    """The change from the old config to the new one cannot be applied on a live node.

    ``detail`` is the innermost upstream text (``ignition disks section contains changes``);
    ``str()`` is the full reason in upstream wording.
    """

    def __init__(self, old_name: str, new_name: str, detail: str) -> None:
        self.old_name = old_name
        self.new_name = new_name
        self.detail = detail
        super().__init__(
            f"can't reconcile config {old_name} with {new_name}: "
            f"configs {old_name}, {new_name} are not reconcilable: "
            f"new machineconfig {goquote(old_name)} is not reconcilable against "
            f"{goquote(new_name)}: {detail}"
        )
