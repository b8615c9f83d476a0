"""A ContainerRuntimeConfig as the container runtimes' own drop-ins (upstream
``validateUserContainerRuntimeConfig``, ``createCRIODropinFiles``).

CRI-O gets upstream's files, one per field, in ``/etc/crio/crio.conf.d`` (``01-ctrcfg-logLevel``,
``-pidsLimit``, ``-logSizeMax``, ``-defaultRuntime``). containerd gets one file,
:data:`CONTAINERD_DROPIN`, which containerd reads through its ``config.toml``'s ``imports``
(``logLevel``: ``[debug] level``; ``defaultRuntime``: the CRI plugin's
``default_runtime_name``; CRI-O's ``pids_limit`` and ``log_size_max`` have no containerd
counterpart: the kubelet's ``podPidsLimit`` and ``containerLogMaxSize`` are). A pool's nodes run
one runtime or the other; the other's files lie unread. ``overlaySize`` would rewrite
``/etc/containers/storage.conf`` from OpenShift's template, which mcd does not have: refused,
naming the field."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from mcd.model.generated.objects import GeneratedFile, GenerateError
from mcd.model.node.pinned import parse_quantity

CRIO_DIR = "/etc/crio/crio.conf.d"
CRIO_LOG_LEVEL = f"{CRIO_DIR}/01-ctrcfg-logLevel"
CRIO_PIDS_LIMIT = f"{CRIO_DIR}/01-ctrcfg-pidsLimit"
CRIO_LOG_SIZE_MAX = f"{CRIO_DIR}/01-ctrcfg-logSizeMax"
CRIO_DEFAULT_RUNTIME = f"{CRIO_DIR}/01-ctrcfg-defaultRuntime"
CONTAINERD_DIR = "/etc/containerd/conf.d"
CONTAINERD_DROPIN = f"{CONTAINERD_DIR}/90-mcd-generated-containerruntime.toml"
MIN_LOG_SIZE = 8192
MIN_PIDS_LIMIT = 20
LOG_LEVELS = ("error", "fatal", "panic", "warn", "info", "debug", "trace")
RUNTIMES = ("", "runc", "crun")
_STORE_PATH = re.compile(r"^/[a-zA-Z0-9/._-]+$")


def _quantity(spec: Mapping[str, Any], key: str) -> tuple[str, int] | None:
    raw = spec.get(key)
    if raw is None:
        return None
    try:
        return str(raw), parse_quantity(str(raw))
    except ValueError as e:
        message = f'quantities must match the regular expression for {key} "{raw}"'
        raise GenerateError(message) from e


def _store_problem(path: Any, field: str) -> str:
    text = str(path or "")
    if not text:
        return f"invalid {field}: path must not be empty"
    if not _STORE_PATH.match(text):
        return (f'invalid {field} path "{text}": must be an absolute path containing only '
                "alphanumeric characters, '/', '.', '_', and '-'")  # fmt: skip
    if "//" in text:
        return f'invalid {field} path "{text}": must not contain consecutive forward slashes'
    return ""


def validate(cfg: Mapping[str, Any]) -> None:
    """Upstream ``validateUserContainerRuntimeConfig`` (its messages), and ``overlaySize``,
    which plain Kubernetes nodes cannot take from mcd."""
    spec = (cfg.get("spec") or {}).get("containerRuntimeConfig")
    if spec is None:
        return
    if not isinstance(spec, Mapping):
        raise GenerateError("containerRuntimeConfig is not valid")
    pids = spec.get("pidsLimit")
    if pids is not None and pids != 0 and pids < MIN_PIDS_LIMIT:
        raise GenerateError(f"invalid PidsLimit {pids}")
    size = _quantity(spec, "logSizeMax")
    if size is not None and 0 < size[1] <= MIN_LOG_SIZE:
        raise GenerateError(f'invalid LogSizeMax "{size[0]}", cannot be less than 8kB')
    overlay = _quantity(spec, "overlaySize")
    if overlay is not None and overlay[1] < 0:
        raise GenerateError(f'invalid overlaySize "{overlay[0]}", cannot be less than 0')
    level = spec.get("logLevel") or ""
    if level and level not in LOG_LEVELS:
        raise GenerateError(f'invalid LogLevel "{level}", must be one of error, fatal, panic, '
                            "warn, info, debug, or trace")  # fmt: skip
    runtime = spec.get("defaultRuntime") or ""
    if runtime not in RUNTIMES:
        raise GenerateError(f'invalid DefaultRuntime "{runtime}", must be one of crun, runc')
    problems = [
        _store_problem((store or {}).get("path"), field)
        for field in ("AdditionalLayerStores", "AdditionalImageStores", "AdditionalArtifactStores")
        for store in spec.get(field[0].lower() + field[1:]) or []
    ]
    if any(problems):
        raise GenerateError("\n".join(p for p in problems if p))
    if overlay is not None and overlay[1] != 0:
        raise GenerateError(
            "ContainerRuntimeConfiguration: overlaySize is not supported by mcd: it would "
            "rewrite /etc/containers/storage.conf, which plain Kubernetes nodes own; set "
            "[storage.options] size there"
        )


def _crio(key: str, value: str) -> bytes:
    """One CRI-O drop-in as upstream's TOML encoder writes it."""
    return f"[crio]\n  [crio.runtime]\n    {key} = {value}\n".encode()


def files(cfg: Mapping[str, Any]) -> list[GeneratedFile]:
    """The drop-ins, CRI-O's in upstream's order, then containerd's (none if nothing to set)."""
    spec = (cfg.get("spec") or {}).get("containerRuntimeConfig") or {}
    out: list[GeneratedFile] = []
    level = str(spec.get("logLevel") or "")
    runtime = str(spec.get("defaultRuntime") or "")
    if level:
        out.append(GeneratedFile(CRIO_LOG_LEVEL, _crio("log_level", json.dumps(level))))
    if spec.get("pidsLimit") is not None:
        pids = int(spec["pidsLimit"])
        body = _crio("pids_limit", str(pids)) if pids else b"[crio]\n  [crio.runtime]\n"
        out.append(GeneratedFile(CRIO_PIDS_LIMIT, body))
    size = _quantity(spec, "logSizeMax")
    if size is not None and size[1] != 0:
        out.append(GeneratedFile(CRIO_LOG_SIZE_MAX, _crio("log_size_max", str(size[1]))))
    if runtime:
        body = _crio("default_runtime", json.dumps(runtime))
        out.append(GeneratedFile(CRIO_DEFAULT_RUNTIME, body))
    lines = []
    if level:
        lines += ["[debug]", f"  level = {json.dumps(level)}"]
    if runtime:
        lines += ['[plugins."io.containerd.grpc.v1.cri".containerd]',
                  f"  default_runtime_name = {json.dumps(runtime)}"]  # fmt: skip
    if lines:
        text = "# Generated by mcd controller from a ContainerRuntimeConfig\nversion = 2\n"
        out.append(GeneratedFile(CONTAINERD_DROPIN, (text + "\n".join(lines) + "\n").encode()))
    return out
