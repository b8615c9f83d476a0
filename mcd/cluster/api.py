"""The API server connection: client configuration and JSON requests as plain dicts.

A request goes on a kept-alive connection (:mod:`mcd.cluster.wire.http11`), a watch through
one urllib3 pool (:mod:`mcd.cluster.wire.transport`), configured by
:mod:`mcd.cluster.wire.kubeconfig` from the in-cluster service account or a kubeconfig file;
the official ``kubernetes`` client is imported only for a kubeconfig whose user runs an
exec or auth-provider plugin. Bodies are JSON parsed here into plain dicts, so a field
no model knows (or a MachineConfig, which has no model) never breaks the agent, and an
idle agent carries no models, no pydantic and no requests/oauthlib (~38 MB of RSS
against ~55 MB through ``ApiClient``). Errors become :class:`ApiError` carrying the HTTP
status and the server's ``Status`` reason and message.
"""

from __future__ import annotations

import json
import logging
import os
import re
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import urllib3

from mcd.cluster.wire.http11 import BadResponse
from mcd.cluster.wire.kubeconfig import KubeconfigError, from_files, in_cluster, kubeconfig_files
from mcd.cluster.wire.transport import USER_AGENT, Connection

Obj = dict[str, Any]

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
__all__ = ["USER_AGENT", "ApiError", "ConfigurationError", "Connection", "Kube", "load_client"]

log = logging.getLogger(__name__)


class ApiError(Exception):
    """A request the API server refused, or that never got an answer (``status`` 0)."""

    def __init__(self, status: int, reason: str, message: str, body: Obj | None = None) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body or {}
        super().__init__(f"{status} {reason}: {message}" if status else message)

    @classmethod
    def from_status(cls, status: Obj) -> ApiError:
        """The error a watch's ``ERROR`` event carries (its object is a ``Status``)."""
        return cls(
            int(status.get("code") or 0),
            str(status.get("reason", "")),
            str(status.get("message", "")),
            status,
        )

    @property
    def causes(self) -> list[Obj]:
        return list((self.body.get("details") or {}).get("causes") or [])


class ConfigurationError(Exception):
    """No usable kubeconfig or in-cluster service account."""


SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
HOST_KUBECONFIG = "/etc/kubernetes/kubeconfig"


def load_client(
    kubeconfig: str | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    root_mount: str | None = None,
    service_account: str = SERVICE_ACCOUNT,
    context: str | None = None,
) -> Connection:
    """As kubectl finds its cluster: ``--kubeconfig``, else ``KUBECONFIG`` (``a:b`` merged),
    else ``~/.kube/config``, else the in-cluster service account; ``context`` as
    ``--context`` (:func:`mcd.cluster.wire.kubeconfig.kubeconfig_files`).

    With ``root_mount`` (``mcd start``), no ``~/.kube/config`` (an agent runs on its own
    account, not its host user's), and the in-cluster credentials talk to the API
    server named by the host's kubelet kubeconfig, ``<root>/etc/kubernetes/kubeconfig``,
    as upstream does (``overriding kubernetes api to ...``), so the agent does not
    depend on the service network; without that file, the in-cluster service address.
    """
    env = os.environ if environ is None else environ
    try:
        paths = kubeconfig_files(kubeconfig, env, home_fallback=root_mount is None)
    except KubeconfigError as e:
        raise ConfigurationError(str(e)) from e
    if not paths and env.get("KUBECONFIG"):
        raise ConfigurationError(f"{env['KUBECONFIG']}: no such file ($KUBECONFIG)")
    try:
        if paths:
            return from_files(paths, context)
        overrides = dict(env)
        server = host_api_server(root_mount) if root_mount is not None else None
        if server is not None:
            log.info("overriding kubernetes api to %s", server)
            url = urllib.parse.urlsplit(server)
            overrides["KUBERNETES_SERVICE_HOST"] = url.hostname or ""
            overrides["KUBERNETES_SERVICE_PORT"] = str(url.port or 443)
        return in_cluster(service_account, overrides)
    except KubeconfigError as e:
        where = ":".join(paths) or "the in-cluster service account"
        message = f"cannot load the API server configuration from {where}: {e}"
        raise ConfigurationError(message) from e


def host_api_server(root_mount: str) -> str | None:
    """The ``server`` of the current context of the host's kubelet kubeconfig, or None."""
    import yaml  # noqa: PLC0415  (only mcd start reads the host's kubeconfig)

    where = os.path.join(root_mount, HOST_KUBECONFIG.lstrip("/"))
    try:
        with open(where, "rb") as f:
            doc = yaml.safe_load(f.read(1 << 20))
        contexts = {c["name"]: c["context"] for c in doc.get("contexts") or []}
        clusters = {c["name"]: c["cluster"] for c in doc.get("clusters") or []}
        server = clusters[contexts[doc["current-context"]]["cluster"]]["server"]
        if not isinstance(server, str) or not server.startswith(("https://", "http://")):
            raise ValueError(f"server {server!r} is not a URL")
        return server
    except FileNotFoundError:
        log.info("No kubelet kubeconfig at %s; using the in-cluster API server address", where)
    except (OSError, yaml.YAMLError, KeyError, TypeError, AttributeError, ValueError) as e:
        log.warning(
            "failed to load kubelet kubeconfig %s (%s); using the in-cluster API server address",
            where, type(e).__name__,
        )  # fmt: skip
    return None


class Kube:
    """JSON requests to the API server; one instance per agent, safe to share across threads."""

    def __init__(self, api: Connection, timeout: float = 30.0) -> None:
        self.api = api
        self.timeout = timeout

    def request(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: float | None = None,
    ) -> Obj:
        headers = {"Accept": JSON, "Content-Type": content_type}
        params = [(k, _param(v)) for k, v in (query or {}).items() if v is not None]
        data = None if body is None else json.dumps(body).encode()
        try:
            reply = self.api.send(method, path, params, headers, data, timeout or self.timeout)
        except (urllib3.exceptions.HTTPError, OSError, BadResponse) as e:
            raise self._unreachable(f"{method} {path}", e) from e
        if not 200 <= reply.status < 300:
            raise _api_error(reply.status, reply.reason, reply.data)
        return json.loads(reply.data) if reply.data else {}

    def stream(
        self, path: str, query: Mapping[str, Any], timeout: float,
        opened: Callable[[], None] | None = None, skip: Callable[[bytes], bool] | None = None,
    ) -> Iterator[Obj]:  # fmt: skip
        """A watch: one dict per JSON line until the server ends the stream; ``opened`` is
        called once the server has accepted it (before any event); a line ``skip`` says
        True of is not parsed (nor yielded).

        A stream cut short (the connection closed between chunks, inside one, or inside an
        event's line) ends with an :class:`ApiError` (reason ``StreamCut``) saying so and
        how many events came before: the caller resumes from the last one it took in.
        """
        response = self._call(
            "GET", path, {**query, "watch": "true"}, None, JSON, timeout, stream=True
        )
        if opened is not None:
            opened()
        events = 0
        try:
            pending = b""
            for chunk in response.stream(4096, decode_content=False):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        events += 1
                        if skip is None or not skip(line):
                            yield json.loads(line)
            if pending.strip():
                try:
                    last = json.loads(pending)
                except ValueError:
                    raise self._cut(path, events, f"{len(pending)} bytes of an event") from None
                yield last
        except urllib3.exceptions.ProtocolError as e:
            raise self._cut(path, events, network_cause(e)) from e
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise self._unreachable(f"watch {path} ended", e) from e
        finally:
            response.release_conn()

    def _call(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None,
        body: Any,
        content_type: str,
        timeout: float,
        stream: bool = False,
    ) -> urllib3.BaseHTTPResponse:
        headers = {"Accept": JSON, "Content-Type": content_type}
        params = [(k, _param(v)) for k, v in (query or {}).items() if v is not None]
        data = None if body is None else json.dumps(body).encode()
        limit = urllib3.Timeout(connect=10.0, read=timeout) if stream else urllib3.Timeout(timeout)
        try:
            response = self.api.open(method, path, params, headers, data, limit)
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise self._unreachable(f"{method} {path}", e) from e
        if not 200 <= response.status < 300:
            try:
                raw = response.data
            except (urllib3.exceptions.HTTPError, OSError):
                raw = b""
            finally:
                response.release_conn()
            raise _api_error(response.status, response.reason, raw)
        return response

    @property
    def server(self) -> str:
        return self.api.host or "the API server"

    def _unreachable(self, what: str, e: BaseException) -> ApiError:
        """One line naming the server and the innermost cause, not urllib3's nested repr."""
        return ApiError(0, "Unreachable", f"{self.server}: {what}: {network_cause(e)}")

    def _cut(self, path: str, events: int, why: str) -> ApiError:
        """A watch stream that ended without the end of its body."""
        message = f"{self.server}: watch {path} cut short after {events} events ({why})"
        return ApiError(0, "StreamCut", message)


def network_cause(e: BaseException) -> str:
    """``Connection refused``, ``timed out``...: the innermost cause of a network error."""
    seen: list[BaseException] = []
    current: BaseException | None = e
    while current is not None and current not in seen:
        seen.append(current)
        if isinstance(current, OSError) and current.strerror:
            return str(current.strerror)
        nested = getattr(current, "reason", None)
        if isinstance(nested, BaseException):
            current = nested
        elif current.__cause__ is not None or current.__suppress_context__:
            current = current.__cause__  # ``raise ... from None``: the context is no cause
        else:
            current = current.__context__
    text = str(seen[-1]) or type(seen[-1]).__name__
    # urllib3 puts "<urllib3.connection.HTTPConnection object at 0x7f...>: " before the cause
    return re.sub(r"<[^<>]* object at 0x[0-9a-f]+>: ", "", text)


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _api_error(status: int | None, reason: str | None, raw: bytes | str | None) -> ApiError:
    body: Obj = {}
    if raw:
        try:
            parsed = json.loads(raw)
            body = parsed if isinstance(parsed, dict) else {}
        except (ValueError, TypeError):
            body = {}
    return ApiError(
        int(status or 0),
        str(body.get("reason") or reason or ""),
        str(body.get("message") or reason or ""),
        body,
    )
