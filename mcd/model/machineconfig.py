"""A rendered MachineConfig: the Kubernetes object, or a bare Ignition config.

``load_machine_config`` is the single entry point from untrusted text to the
model. Whatever the input, it returns a ``MachineConfig`` or raises a
``ConfigError``; it never lets a YAML, JSON or recursion error escape.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from mcd.model import fields as f
from mcd.model.errors import ConfigError, ConfigParseError
from mcd.model.ignition.config import IgnitionConfig
from mcd.model.ignition.parse import empty_config, parse_ignition
from mcd.model.osupdate.imagemode import OCL_OS_IMAGE_URL
from mcd.model.vocabulary import EMPTY_CONFIG_NAME

MAX_DOCUMENT_BYTES = 512 * 1024 * 1024
MAX_NODES = 5_000_000
"""Expanded size limit: YAML aliases can make a small document enormous."""


@dataclass(frozen=True)
class MachineConfig:
    name: str
    ignition: IgnitionConfig = field(default_factory=empty_config)
    os_image_url: str = ""
    kernel_arguments: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()
    fips: bool = False
    kernel_type: str = ""
    base_os_extensions_container_image: str = ""
    ocl_image: str = ""
    """Image mode: the image embedded as ``osImageURL`` (:mod:`mcd.model.osupdate.imagemode`)."""

    @property
    def canonical_kernel_type(self) -> str:
        """``realtime`` and ``64k-pages`` as given; anything else is ``default``."""
        return self.kernel_type if self.kernel_type in ("realtime", "64k-pages") else "default"


def empty_machine_config() -> MachineConfig:
    """What upstream uses when a node has no current config (``canonicalizeEmptyMC``)."""
    return MachineConfig(name=EMPTY_CONFIG_NAME)


class _Loader(yaml.SafeLoader):
    """Safe YAML, with every scalar the way JSON would see it where it matters."""


def decode_document(data: bytes | str) -> Any:
    """YAML or JSON text to plain Python data, or ``ConfigParseError``."""
    if isinstance(data, bytes):
        if len(data) > MAX_DOCUMENT_BYTES:
            raise ConfigParseError(f"document is larger than {MAX_DOCUMENT_BYTES} bytes")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ConfigParseError(
                f"document is not valid UTF-8: {e.reason} at byte {e.start}"
            ) from e
    else:
        text = data
    text = text.removeprefix("\ufeff")
    try:
        if text.lstrip().startswith(("{", "[")):
            try:
                doc = json.loads(text)
            except json.JSONDecodeError:
                doc = yaml.load(text, Loader=_Loader)  # flow-style YAML also starts with '{'
        else:
            doc = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as e:
        raise ConfigParseError(f"not valid YAML or JSON: {_yaml_problem(e, text)}") from e
    except RecursionError as e:
        raise ConfigParseError("document is nested too deeply") from e
    except (ValueError, OverflowError) as e:  # e.g. huge integers, bad timestamps
        raise ConfigParseError(f"not valid YAML or JSON: {_one_line(str(e))}") from e
    _check_size(doc)
    return doc


def _one_line(s: str) -> str:
    return " ".join(s.split())


def _yaml_problem(e: yaml.YAMLError, text: str) -> str:
    """What is wrong and where (line, column), never the document's text: PyYAML's own
    message quotes the lines around the error, which may hold a secret."""
    if isinstance(e, yaml.MarkedYAMLError):
        what = ": ".join(_one_line(p) for p in (e.context, e.problem) if p) or "invalid"
        mark = e.problem_mark or e.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        return what + where
    if isinstance(e, yaml.reader.ReaderError):
        before = text[: e.position]
        line, column = before.count("\n") + 1, e.position - (before.rfind("\n") + 1) + 1
        char = f" (U+{e.character:04X})" if isinstance(e.character, int) else ""
        return f"{_one_line(e.reason)}{char} at line {line}, column {column}"
    return type(e).__name__


def _check_size(doc: object) -> None:
    """Count nodes as if aliases were expanded; refuse documents beyond ``MAX_NODES``."""
    budget = MAX_NODES
    sizes: dict[int, int] = {}

    def size(node: object, depth: int) -> int:
        nonlocal budget
        if depth > 200:
            raise ConfigParseError("document is nested too deeply")
        if isinstance(node, Mapping):
            children: list[object] = [*node.keys(), *node.values()]
        elif isinstance(node, list):
            children = node
        else:
            return 1
        key = id(node)
        if key in sizes:
            n = sizes[key]
        else:
            n = 1 + sum(size(c, depth + 1) for c in children)
            sizes[key] = n
        budget -= n
        if budget < 0:
            raise ConfigParseError(
                f"document expands to more than {MAX_NODES} values (YAML alias bomb?)"
            )
        return n

    size(doc, 0)


def load_machine_config(data: bytes | str, default_name: str = "") -> MachineConfig:
    """Parse a MachineConfig object or a bare Ignition config from YAML/JSON text."""
    doc = decode_document(data)
    return machine_config_from_object(doc, default_name)


def machine_config_from_object(doc: object, default_name: str = "") -> MachineConfig:
    try:
        return _from_object(doc, default_name)
    except RecursionError as e:
        raise ConfigParseError("document is nested too deeply") from e


def _from_object(doc: object, default_name: str) -> MachineConfig:
    obj = f.as_map(doc, "")
    if "ignition" in obj and "spec" not in obj:
        return MachineConfig(name=default_name or EMPTY_CONFIG_NAME, ignition=parse_ignition(obj))
    kind = obj.get("kind")
    if kind is not None and kind != "MachineConfig":
        raise ConfigParseError(f"expected kind MachineConfig, got {kind!s:.60}", "kind")
    if "spec" not in obj:
        raise ConfigParseError(
            "neither a MachineConfig (no spec) nor an Ignition config (no ignition section)"
        )
    meta = f.opt_map(obj, "metadata", "")
    name = f.opt_str(meta, "name", "metadata") or default_name or EMPTY_CONFIG_NAME
    spec = f.opt_map(obj, "spec", "")
    config = spec.get("config")
    if isinstance(config, str):  # RawExtension given as embedded JSON text
        config = decode_document(config)
    ignition = parse_ignition(config, "spec.config") if config is not None else empty_config()
    kernel_type = f.opt_str(spec, "kernelType", "spec") or ""
    return MachineConfig(
        name=name,
        ignition=ignition,
        os_image_url=f.opt_str(spec, "osImageURL", "spec") or "",
        kernel_arguments=f.str_list(spec, "kernelArguments", "spec"),
        extensions=f.str_list(spec, "extensions", "spec"),
        fips=bool(f.opt_bool(spec, "fips", "spec")),
        kernel_type=kernel_type,
        base_os_extensions_container_image=f.opt_str(spec, "baseOSExtensionsContainerImage", "spec")
        or "",
        ocl_image=_ocl_image(meta),
    )


def _ocl_image(meta: f.JSONMap) -> str:
    annotations = meta.get("annotations")
    if not isinstance(annotations, dict):
        return ""
    image = annotations.get(OCL_OS_IMAGE_URL)
    return image if isinstance(image, str) else ""


__all__ = [
    "ConfigError",
    "MachineConfig",
    "decode_document",
    "empty_machine_config",
    "load_machine_config",
    "machine_config_from_object",
]
