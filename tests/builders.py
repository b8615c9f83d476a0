"""Build MachineConfig documents for tests, through the real parser."""

from __future__ import annotations

from typing import Any

from mcd.model.ignition.dataurl import encode_data_url
from mcd.model.machineconfig import MachineConfig, machine_config_from_object


def file_entry(
    path: str, data: bytes | str = b"", mode: int | None = 0o644, **extra: Any
) -> dict[str, Any]:
    raw = data.encode() if isinstance(data, str) else data
    entry: dict[str, Any] = {"path": path, "contents": {"source": encode_data_url(raw)}}
    if mode is not None:
        entry["mode"] = mode
    entry.update(extra)
    return entry


def mc_doc(
    name: str = "rendered-worker-1",
    files: list[dict[str, Any]] | None = None,
    units: list[dict[str, Any]] | None = None,
    users: list[dict[str, Any]] | None = None,
    version: str = "3.4.0",
    storage: dict[str, Any] | None = None,
    ignition_extra: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    config: dict[str, Any] = {"ignition": {"version": version}}
    st: dict[str, Any] = dict(storage or {})
    if files is not None:
        st["files"] = files
    if st:
        config["storage"] = st
    if units is not None:
        config["systemd"] = {"units": units}
    if users is not None:
        config["passwd"] = {"users": users}
    config.update(ignition_extra or {})
    return {
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": name},
        "spec": {"config": config, **spec},
    }


def mc(name: str = "rendered-worker-1", **kwargs: Any) -> MachineConfig:
    return machine_config_from_object(mc_doc(name, **kwargs))
