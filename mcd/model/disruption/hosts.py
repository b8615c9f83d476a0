"""containerd's registry hosts (``/etc/containerd/certs.d/<namespace>/hosts.toml``): how a
file is decoded, where containerd looks for a registry's file, and which changes are safe
to apply without draining (pure).

containerd's CRI plugin reads these files on every pull when its ``registry.config_path``
names the directory, so a change needs no restart. Whether it needs a drain follows
upstream's ``isSafeContainerRegistryConfChanges`` for ``registries.conf``, carried over:

- a namespace directory is upstream's registry (its ``prefix``), ``server`` its
  ``location``, each ``[host."URL"]`` a mirror, a host without the ``resolve`` capability a
  ``pull-from-mirror = "digest-only"`` mirror (containerd asks it for content by digest
  only, so it cannot change what a tag means), and ``skip_verify`` its ``insecure``;
- unsafe: ``server`` changed, ``skip_verify`` changed (on the namespace or a mirror), a
  mirror removed, a mirror added that may resolve tags, a kept mirror allowed to resolve
  tags, a mirror's ``override_path`` changed, or the order of the mirrors that resolve
  tags changed (containerd asks them in order: the first one answers a tag);
- safe: a digest-only mirror added, a mirror narrowed to digest-only, ``ca``, ``client``,
  ``header`` or ``capabilities = ["push"]`` changes;
- a new file is compared with containerd's default for the namespace (the registry itself,
  default TLS), a removed file the same way: a file that only adds a CA is safe both ways,
  as upstream's registry CAs never drain; one that adds a tag mirror is not.

A file containerd cannot decode fails the update (upstream fails it on a bad
``registries.conf``), because containerd would ignore it silently and fall back to the
directory's certificate files: bad TOML, a value of the wrong type, an unknown capability,
and (containerd 1.6 and 1.7, containerd#10027) a file without any ``[host]`` table.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcd.model.errors import ConfigError
from mcd.model.text import goquote

CERTS_D = "/etc/containerd/certs.d"
HOSTS_TOML = "hosts.toml"
DEFAULT_NAMESPACE = "_default"
CAPABILITIES = ("pull", "resolve", "push")
DOCKER_HUB = "docker.io"
DOCKER_HUB_SERVER = "https://registry-1.docker.io"


class HostsTomlError(ConfigError):
    """A ``hosts.toml`` containerd cannot decode; the update fails."""


@dataclass(frozen=True)
class HostEntry:
    """One endpoint: a ``[host."URL"]`` table, or the file's root (its ``server``)."""

    url: str = ""
    capabilities: frozenset[str] = frozenset(CAPABILITIES)
    skip_verify: bool | None = None
    ca: tuple[str, ...] = ()
    client: tuple[tuple[str, str], ...] = ()
    header: tuple[tuple[str, tuple[str, ...]], ...] = ()
    override_path: bool = False

    @property
    def resolves(self) -> bool:
        """May answer a tag (``resolve``); without it the host serves content by digest."""
        return "resolve" in self.capabilities


@dataclass(frozen=True)
class HostsFile:
    server: HostEntry
    """The root: ``server`` (its url; '' when unset) and its TLS settings."""
    hosts: tuple[HostEntry, ...] = ()
    """The ``[host."URL"]`` tables, in file order (the order containerd tries them)."""


# -- where containerd looks ----------------------------------------------------------------


def host_directory(host: str) -> str:
    """containerd's ``hostDirectory``: ``registry:5000`` -> ``registry_5000_``."""
    idx = host.rfind(":")
    return f"{host[:idx]}_{host[idx + 1 :]}_" if idx > 0 else host


def host_dirs(host: str) -> tuple[str, ...]:
    """The directories under a ``config_path`` root containerd tries for ``host``, in order
    (``hostPaths``): ``host_port_`` when there is a port, ``host``, ``_default``."""
    dirs = [host_directory(host)] if host_directory(host) != host else []
    return (*dirs, host, DEFAULT_NAMESPACE)


def hosts_path(host: str) -> str:
    """Where mcd would write ``host``'s file: ``certs.d/<hostDirectory>/hosts.toml``."""
    return f"{CERTS_D}/{host_directory(host)}/{HOSTS_TOML}"


def namespace_of(path: str) -> str | None:
    """The namespace directory of ``/etc/containerd/certs.d/<dir>/hosts.toml``; None for
    any other path (a CA file, a deeper file, elsewhere)."""
    clean = posixpath.normpath(path)
    parent, name = posixpath.split(clean)
    if name != HOSTS_TOML or posixpath.dirname(parent) != CERTS_D:
        return None
    namespace = posixpath.basename(parent)
    return namespace if namespace not in ("", ".", "..") else None


def registry_of(namespace: str) -> str:
    """The registry a namespace directory stands for: ``registry_5000_`` -> ``registry:5000``."""
    if namespace.endswith("_") and "_" in namespace[:-1]:
        head, _, port = namespace[:-1].rpartition("_")
        if head and port.isdigit():
            return f"{head}:{port}"
    return namespace


def default_server(namespace: str) -> str:
    """containerd's endpoint for a namespace without ``server``."""
    registry = registry_of(namespace)
    if registry == DOCKER_HUB:
        return DOCKER_HUB_SERVER
    return "" if namespace == DEFAULT_NAMESPACE else f"https://{registry}"


def normalize_url(url: str) -> str:
    """As containerd reads a server: ``https://`` when no scheme, no trailing ``/`` or ``/v2``."""
    if not url:
        return ""
    full = url if url.startswith("http") else f"https://{url}"
    full = full.rstrip("/")
    return full[: -len("/v2")] if full.endswith("/v2") else full


# -- decoding ------------------------------------------------------------------------------


def parse_hosts_toml(data: bytes, path: str) -> HostsFile:
    """Decode a ``hosts.toml`` as containerd's ``parseHostsFile`` would accept it."""
    import tomllib  # noqa: PLC0415  (read only when a plan meets a hosts.toml)

    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise _error(path, f"invalid UTF-8 at byte {e.start}") from e
    except tomllib.TOMLDecodeError as e:
        raise _error(path, str(e)) from e
    tables = doc.get("host")
    if not isinstance(tables, dict):
        raise _error(
            path,
            "invalid `host` tree: containerd 1.6 and 1.7 ignore a hosts.toml without a "
            "[host] table; add one (an empty [host] will do)",
        )
    server = doc.get("server", "")
    if not isinstance(server, str):
        raise _error(path, "server: must be a string")
    hosts = []
    for url, table in tables.items():
        if not isinstance(table, dict):
            raise _error(path, f"host.{goquote(url)}: must be a table")
        hosts.append(_entry(path, normalize_url(url), table, f"host.{goquote(url)}."))
    return HostsFile(_entry(path, normalize_url(server), doc, ""), tuple(hosts))


def _entry(path: str, url: str, table: Mapping[str, Any], where: str) -> HostEntry:
    caps = table.get("capabilities")
    capabilities = frozenset(CAPABILITIES)
    if caps is not None:
        names = _strings(path, caps, f"{where}capabilities", single=False)
        for name in names:
            if name.lower() not in CAPABILITIES:
                raise _error(path, f"unknown capability {name}")
        if names:
            capabilities = frozenset(n.lower() for n in names)
    skip = table.get("skip_verify")
    if skip is not None and not isinstance(skip, bool):
        raise _error(path, f"{where}skip_verify: must be a boolean")
    override = table.get("override_path", False)
    if not isinstance(override, bool):
        raise _error(path, f"{where}override_path: must be a boolean")
    ca = _strings(path, table["ca"], f"{where}ca") if "ca" in table else ()
    return HostEntry(
        url=url,
        capabilities=capabilities,
        skip_verify=skip,
        ca=ca,
        client=_client(path, table.get("client"), f"{where}client"),
        header=_header(path, table.get("header"), f"{where}header"),
        override_path=override,
    )


def _strings(path: str, value: object, where: str, *, single: bool = True) -> tuple[str, ...]:
    if single and isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise _error(path, f"{where}: must be {'a string or ' if single else ''}a list of strings")


def _client(path: str, value: object, where: str) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return ((value, ""),)
    if not isinstance(value, list):
        raise _error(path, f"{where}: must be a string or a list")
    pairs = []
    for item in value:
        if isinstance(item, str):
            pairs.append((item, ""))
        elif isinstance(item, list) and len(item) == 2 and all(isinstance(v, str) for v in item):
            pairs.append((str(item[0]), str(item[1])))
        else:
            raise _error(path, f"{where}: a pair must be two strings")
    return tuple(pairs)


def _header(path: str, value: object, where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise _error(path, f"{where}: must be a table")
    return tuple((str(k), _strings(path, v, f"{where}.{k}")) for k, v in sorted(value.items()))


def _error(path: str, detail: str) -> HostsTomlError:
    return HostsTomlError(f"failed decoding TOML content from file {path}: {detail}")


# -- encoding ------------------------------------------------------------------------------


def _quote(s: str) -> str:
    out = s.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "".join(c if c.isprintable() else f"\\u{ord(c):04X}" for c in out) + '"'


def _list(items: tuple[str, ...]) -> str:
    return "[" + ", ".join(_quote(i) for i in items) + "]"


def _lines(entry: HostEntry, *, root: bool) -> list[str]:
    lines = []
    if root and entry.url:
        lines.append(f"server = {_quote(entry.url)}")
    if not root or entry.capabilities != frozenset(CAPABILITIES):
        lines.append(
            f"capabilities = {_list(tuple(c for c in CAPABILITIES if c in entry.capabilities))}"
        )
    if entry.skip_verify is not None:
        lines.append(f"skip_verify = {str(entry.skip_verify).lower()}")
    if entry.ca:
        lines.append(f"ca = {_list(entry.ca)}")
    if entry.client:
        pairs = ", ".join(_list(p) if p[1] else _quote(p[0]) for p in entry.client)
        lines.append(f"client = [{pairs}]")
    if entry.override_path:
        lines.append("override_path = true")
    if entry.header:
        inline = ", ".join(f"{_quote(k)} = {_list(v)}" for k, v in entry.header)
        lines.append(f"header = {{ {inline} }}")
    return lines


def render_hosts_toml(hosts: HostsFile) -> bytes:
    """A ``hosts.toml`` that decodes to ``hosts`` (each mirror's full URL as its key, the
    mirrors in order, a ``[host]`` table always present for containerd 1.6 and 1.7)."""
    lines = _lines(hosts.server, root=True)
    lines.append("[host]" if not hosts.hosts else "")
    for entry in hosts.hosts:
        lines.append(f"[host.{_quote(entry.url)}]")
        lines += [f"  {line}" for line in _lines(entry, root=False)]
    return ("\n".join(line for line in lines if line) + "\n").encode()


# -- the no-drain rules --------------------------------------------------------------------


def unsafe_change(namespace: str, old: bytes | None, new: bytes | None) -> str:
    """Why changing ``namespace``'s ``hosts.toml`` from ``old`` to ``new`` needs a drain;
    empty when it is safe. ``None`` is no file: containerd's default for the namespace.
    :class:`HostsTomlError` when either side cannot be decoded."""
    path = f"{CERTS_D}/{namespace}/{HOSTS_TOML}"
    default = HostsFile(HostEntry(url=default_server(namespace)))
    before = parse_hosts_toml(old, path) if old is not None else default
    after = parse_hosts_toml(new, path) if new is not None else default
    was = before.server.url or default_server(namespace)
    now = after.server.url or default_server(namespace)
    if was != now:
        return f"{path}: server for registry {namespace} has changed from {was} to {now}"
    if bool(before.server.skip_verify) != bool(after.server.skip_verify):
        return _skip_changed(path, namespace, before.server, after.server)
    old_hosts = {h.url: h for h in before.hosts}
    new_hosts = {h.url: h for h in after.hosts}
    for url in old_hosts:
        if url not in new_hosts:
            return f"{path}: mirror {url} has been removed in registry {namespace}"
    for url, entry in new_hosts.items():
        reason = _mirror_change(path, namespace, old_hosts.get(url), entry)
        if reason:
            return reason
    kept = [h.url for h in before.hosts if h.resolves and h.url in new_hosts]
    now_order = [h.url for h in after.hosts if h.url in kept]
    if kept != now_order:
        return (
            f"{path}: mirrors that resolve tags have been reordered in registry {namespace} "
            f"(from {', '.join(kept)} to {', '.join(now_order)})"
        )
    return ""


def _mirror_change(path: str, namespace: str, old: HostEntry | None, new: HostEntry) -> str:
    if old is None:
        if new.resolves:
            return (
                f"{path}: mirror {new.url} has been added in registry {namespace} that can "
                "resolve tags (capabilities without resolve make it digest-only)"
            )
        return ""
    if new.resolves and not old.resolves:
        return f"{path}: mirror {new.url} in registry {namespace} may now resolve tags"
    if old.override_path != new.override_path:
        return f"{path}: override_path for mirror {new.url} in registry {namespace} has changed"
    if bool(old.skip_verify) != bool(new.skip_verify):
        return _skip_changed(path, f"{namespace} mirror {new.url}", old, new)
    return ""


def _skip_changed(path: str, what: str, old: HostEntry, new: HostEntry) -> str:
    was, now = str(bool(old.skip_verify)).lower(), str(bool(new.skip_verify)).lower()
    return f"{path}: skip_verify value for registry {what} has changed from {was} to {now}"
