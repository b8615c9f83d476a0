"""Where the API server is and how to authenticate, found as kubectl finds it
(:func:`kubeconfig_files`: ``--kubeconfig``, else ``KUBECONFIG=a:b`` merged by kubectl's
rules, else ``~/.kube/config``, else the in-cluster service account; ``--context``), read into
a :class:`~mcd.cluster.wire.transport.Connection`.

A small reader for what nodes and tests use (server, CA file or data,
``insecure-skip-tls-verify``, ``tls-server-name``, client certificate and key as files or
data, ``token``, ``tokenFile``, username and password). A kubeconfig whose user runs an
``exec`` or ``auth-provider`` plugin, or whose cluster goes through a ``proxy-url``, is
handed to the official client's full loader, imported only then: that loader costs ~12 MB
of memory (pydantic, requests, oauthlib) that the DaemonSet's agent, on its service
account, never needs.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcd.cluster.wire.transport import Connection, Tls, TokenFile, basic_auth, static_header


class KubeconfigError(Exception):
    """The configuration cannot be used; the message names the field."""


PLUGIN_USER_KEYS = ("exec", "auth-provider")


def in_cluster(service_account: str, environ: Mapping[str, str]) -> Connection:
    """client-go's ``rest.InClusterConfig``: the service address from the environment,
    the service account's token (read again on rotation) and CA."""
    host = environ.get("KUBERNETES_SERVICE_HOST")
    port = environ.get("KUBERNETES_SERVICE_PORT")
    if host is None or port is None:
        raise KubeconfigError("Service host/port is not set.")
    if not host or not port:
        raise KubeconfigError("Service host/port is set but empty.")
    token_path = os.path.join(service_account, "token")
    ca_path = os.path.join(service_account, "ca.crt")
    if not os.path.isfile(token_path):
        raise KubeconfigError("Service token file does not exist.")
    try:
        token = TokenFile(token_path)
    except ValueError:
        raise KubeconfigError("Token file exists but empty.") from None
    except OSError as e:
        raise KubeconfigError(f"{token_path}: {e.strerror}") from None
    if not os.path.isfile(ca_path):
        raise KubeconfigError("Service certification file does not exist.")
    if os.path.getsize(ca_path) == 0:
        raise KubeconfigError("Cert file exists but empty.")
    hostport = f"[{host}]:{port}" if ":" in host or "%" in host else f"{host}:{port}"
    return Connection(f"https://{hostport}", Tls(ca_file=ca_path), token)


RECOMMENDED_HOME = (".kube", "config")
"""``~/.kube/config``: client-go's ``RecommendedHomeFile``."""


def kubeconfig_files(
    explicit: str | None, environ: Mapping[str, str], home_fallback: bool = True
) -> list[str]:
    """The files kubectl would read, in precedence order (client-go's
    ``ClientConfigLoadingRules``): ``--kubeconfig`` alone (it must exist); else every file of
    ``KUBECONFIG`` (``a:b``, duplicates once, missing ones skipped); else ``~/.kube/config``
    when it exists (and ``home_fallback``); else none (then: in-cluster)."""
    if explicit:
        if not os.path.isfile(explicit):
            why = "not a file" if os.path.exists(explicit) else "no such file"
            raise KubeconfigError(f"{explicit}: {why} (--kubeconfig)")
        return [explicit]
    listed = [p for p in (environ.get("KUBECONFIG") or "").split(os.pathsep) if p]
    if listed:
        return [p for p in dict.fromkeys(listed) if os.path.isfile(p)]
    home = environ.get("HOME")
    if home_fallback and home:
        path = os.path.join(home, *RECOMMENDED_HOME)
        if os.path.isfile(path):
            return [path]
    return []


@dataclass
class Merged:
    """Kubeconfig files merged by kubectl's rules: the first file to name a cluster, user or
    context wins it whole, and the first to set ``current-context`` wins it; each entry keeps
    the directory of its file, which its relative paths are relative to."""

    files: list[str] = field(default_factory=list)
    current: str = ""
    entries: dict[tuple[str, str], tuple[dict[str, Any], str, str]] = field(default_factory=dict)
    """(section, name) -> (entry, directory of its file, its file)."""

    def add(self, path: str, doc: dict[str, Any]) -> None:
        self.files.append(path)
        base = os.path.dirname(os.path.abspath(path))
        if not self.current and isinstance(doc.get("current-context"), str):
            self.current = doc["current-context"]
        for section, key in (("clusters", "cluster"), ("users", "user"), ("contexts", "context")):
            for entry in doc.get(section) or []:
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                    continue
                value = entry.get(key) or {}
                if not isinstance(value, dict):
                    raise KubeconfigError(
                        f"{path}: {section}[{entry['name']}].{key}: not a mapping"
                    )
                self.entries.setdefault((section, entry["name"]), (value, base, path))

    def get(self, section: str, name: object) -> tuple[dict[str, Any], str, str]:
        found = self.entries.get((section, str(name)))
        if found is None:
            raise KubeconfigError(f"{section}: no entry named {name!r}")
        return found


def read_files(paths: list[str]) -> Merged:
    """Read and merge ``paths`` (an empty file adds nothing)."""
    import yaml  # noqa: PLC0415  (the offline commands never read a kubeconfig)

    merged = Merged()
    for path in paths:
        try:
            with open(path, "rb") as f:
                doc = yaml.safe_load(f.read(4 << 20))
        except OSError as e:
            raise KubeconfigError(f"{path}: {e.strerror or e}") from None
        except yaml.YAMLError as e:
            raise KubeconfigError(f"{path}: not YAML: {e}") from None
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise KubeconfigError(f"{path}: Invalid kube-config file. No configuration found.")
        merged.add(path, doc)
    return merged


def from_file(path: str, context: str | None = None) -> Connection:
    """The current context (or ``context``) of the kubeconfig at ``path``."""
    return from_files([path], context)


def from_files(paths: list[str], context: str | None = None) -> Connection:
    """The current context (or ``context``, as ``kubectl --context``) of ``paths`` merged."""
    merged = read_files(paths)
    if not merged.files:
        raise KubeconfigError("Invalid kube-config file. No configuration found.")
    name = context or merged.current
    if not name:
        raise KubeconfigError("Invalid kube-config file. Expected key current-context")
    try:
        ctx, _, _ = merged.get("contexts", name)
    except KubeconfigError:
        if context:
            raise KubeconfigError(
                f"context was not found for specified context: {context}"
            ) from None
        raise
    cluster, base, _ = merged.get("clusters", ctx.get("cluster"))
    user, user_base, user_file = (
        merged.get("users", ctx.get("user")) if ctx.get("user") else ({}, base, "")
    )
    if any(user.get(k) for k in PLUGIN_USER_KEYS) or cluster.get("proxy-url"):
        return _full_loader(user_file or merged.files[0], name)
    server = cluster.get("server")
    if not isinstance(server, str) or not server.startswith(("https://", "http://")):
        raise KubeconfigError("cluster.server: not an http(s) URL")
    tls = Tls(
        verify=not cluster.get("insecure-skip-tls-verify", False),
        ca_file=_file(cluster, "certificate-authority", base),
        ca_data=_data(cluster, "certificate-authority-data"),
        cert_file=_file(user, "client-certificate", user_base),
        key_file=_file(user, "client-key", user_base),
        cert_data=_data(user, "client-certificate-data"),
        key_data=_data(user, "client-key-data"),
        server_name=_str(cluster, "tls-server-name"),
    )
    if (tls.cert_file or tls.cert_data) and not (tls.key_file or tls.key_data):
        raise KubeconfigError("user.client-key: missing beside the client certificate")
    return Connection(server, tls, _authorization(user, user_base))


def _str(section: dict[str, Any], key: str) -> str | None:
    value = section.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise KubeconfigError(f"{key}: not a string")
    return value


def _file(section: dict[str, Any], key: str, base: str) -> str | None:
    value = _str(section, key)
    if value is None:
        return None
    path = os.path.join(base, os.path.expanduser(value))
    if not os.path.isfile(path):
        raise KubeconfigError(f"{key}: {path}: no such file")
    return path


def _data(section: dict[str, Any], key: str) -> bytes | None:
    value = _str(section, key)
    if value is None:
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise KubeconfigError(f"{key}: not base64") from None


def _authorization(user: dict[str, Any], base: str) -> Any:
    token = _str(user, "token")
    if token:
        return static_header(f"Bearer {token}")
    token_file = _file(user, "tokenFile", base)
    if token_file:
        try:
            return TokenFile(token_file)
        except ValueError:
            raise KubeconfigError(f"tokenFile: {token_file} is empty") from None
        except OSError as e:
            raise KubeconfigError(f"tokenFile: {token_file}: {e.strerror}") from None
    username, password = _str(user, "username"), _str(user, "password")
    if username and password:
        return static_header(basic_auth(username, password))
    return static_header(None)


def _full_loader(path: str, context: str | None = None) -> Connection:
    """The official client's loader, for plugins this reader does not run itself."""
    from kubernetes import config  # noqa: PLC0415  (~12 MB: only for exec/auth-provider)

    try:
        api = config.new_client_from_config(config_file=path, context=context)  # type: ignore[no-untyped-call]
    except config.ConfigException as e:
        raise KubeconfigError(str(e)) from None
    conf = api.configuration

    def authorization() -> str | None:
        value = conf.auth_settings().get("BearerToken", {}).get("value")
        return str(value) if value else None

    tls = Tls(
        verify=bool(conf.verify_ssl),
        ca_file=conf.ssl_ca_cert,
        cert_file=conf.cert_file,
        key_file=conf.key_file,
        server_name=getattr(conf, "tls_server_name", None),
    )
    return Connection(str(conf.host), tls, authorization, proxy=conf.proxy)
