"""Rendered config names as upstream's render controller gives them (``render/hash.go``).

``rendered-<pool>-<hex MD5 of salt + ghodss/yaml.Marshal(spec)>``: the spec goes through
Go's JSON encoding of ``MachineConfigSpec`` (every key but ``config`` always present, a
missing list is ``null``, ``config`` passed through as it is stored), then through yaml.v2
(:mod:`mcd.model.pool.goyaml`). The same spec therefore has the same name under mcd's
controller and upstream's, so a cluster can move between them without renaming configs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from mcd.model.pool import goscalar, goyaml

# The 80 fixed bytes upstream hashes before the YAML ("Do not change it").
SALT = bytes(
    [
        16, 124, 206, 228, 139, 56, 175, 175, 79, 229, 134, 118, 157, 154, 211, 110,
        25, 93, 47, 253, 172, 106, 37, 7, 174, 13, 160, 185, 110, 17, 87, 52,
        219, 131, 12, 206, 218, 141, 116, 135, 188, 181, 192, 151, 233, 62, 126, 165,
        64, 83, 179, 119, 15, 168, 208, 197, 146, 107, 58, 227, 133, 188, 238, 26,
        33, 26, 235, 202, 32, 173, 31, 234, 41, 144, 148, 79, 6, 206, 23, 22,
    ]
)  # fmt: skip


def go_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The data ``json.Marshal`` of Go's ``MachineConfigSpec`` gives yaml.v2 for ``spec``."""
    return {
        "osImageURL": spec.get("osImageURL") or "",
        "baseOSExtensionsContainerImage": spec.get("baseOSExtensionsContainerImage") or "",
        "config": spec.get("config"),
        "kernelArguments": _list(spec.get("kernelArguments")),
        "extensions": _list(spec.get("extensions")),
        "fips": bool(spec.get("fips")),
        "kernelType": spec.get("kernelType") or "",
    }


def spec_yaml(spec: Mapping[str, Any]) -> str:
    """The YAML upstream hashes for ``spec`` (``ghodss/yaml.Marshal(config.Spec)``).

    Raises ``ValueError`` for text yaml.v2 cannot read back (upstream fails to name it too).
    """
    return goyaml.marshal(goscalar.read_back(go_spec(spec)))


def spec_hash(spec: Mapping[str, Any]) -> str:
    """32 hex digits: MD5 over the salt and :func:`spec_yaml` (upstream's ``hashData``)."""
    digest = hashlib.md5(SALT, usedforsecurity=False)
    digest.update(spec_yaml(spec).encode())
    return digest.hexdigest()


def _list(value: Any) -> list[Any] | None:
    return None if value is None else list(value)
