"""The API server connection: client configuration and JSON requests as plain dicts.

Built on the official ``kubernetes`` client (pinned to 35.x: lenient, no
pydantic validation of responses). Every request goes through
``ApiClient.call_api`` with ``_preload_content=False`` and the body is parsed
as JSON here, so a field the client's models do not know (or a MachineConfig,
which has no model) never breaks the agent. Errors become :class:`ApiError`
carrying the HTTP status and the server's ``Status`` reason and message.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from typing import Any

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

Obj = dict[str, Any]

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
USER_AGENT = "machine-config-daemon"


class ApiError(Exception):
    """A request the API server refused, or that never got an answer (``status`` 0)."""

    def __init__(self, status: int, reason: str, message: str, body: Obj | None = None) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body or {}
        super().__init__(f"{status} {reason}: {message}" if status else message)

    @property
    def causes(self) -> list[Obj]:
        return list((self.body.get("details") or {}).get("causes") or [])


class ConfigurationError(Exception):
    """No usable kubeconfig or in-cluster service account."""


def load_client(
    kubeconfig: str | None = None, environ: Mapping[str, str] | None = None
) -> client.ApiClient:
    """``--kubeconfig``, else ``KUBECONFIG``, else the in-cluster service account."""
    env = os.environ if environ is None else environ
    path = kubeconfig or env.get("KUBECONFIG")
    try:
        if path:
            api = config.new_client_from_config(config_file=path)
        else:
            configuration = client.Configuration()
            config.load_incluster_config(client_configuration=configuration)
            api = client.ApiClient(configuration)
    except config.ConfigException as e:
        where = path or "the in-cluster service account"
        message = f"cannot load the API server configuration from {where}: {e}"
        raise ConfigurationError(message) from e
    api.user_agent = USER_AGENT
    return api


class Kube:
    """JSON requests to the API server; one instance per agent, safe to share across threads."""

    def __init__(self, api: client.ApiClient, timeout: float = 30.0) -> None:
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
        response = self._call(method, path, query, body, content_type, timeout or self.timeout)
        try:
            data = response.data
        finally:
            response.release_conn()
        return json.loads(data) if data else {}

    def stream(self, path: str, query: Mapping[str, Any], timeout: float) -> Iterator[Obj]:
        """A watch: one dict per JSON line until the server ends the stream."""
        response = self._call(
            "GET", path, {**query, "watch": "true"}, None, JSON, timeout, stream=True
        )
        try:
            pending = b""
            for chunk in response.stream(4096, decode_content=False):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield json.loads(line)
            if pending.strip():
                yield json.loads(pending)
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise ApiError(0, "Unreachable", f"watch {path} ended: {e}") from e
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
    ) -> Any:
        headers = {"Accept": JSON, "Content-Type": content_type}
        try:
            return self.api.call_api(
                path,
                method,
                query_params=[(k, _param(v)) for k, v in (query or {}).items() if v is not None],
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
                _preload_content=False,
                _return_http_data_only=True,
                _request_timeout=(10.0, timeout) if stream else timeout,
            )
        except ApiException as e:
            raise _api_error(e) from None
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise ApiError(0, "Unreachable", f"{method} {path}: {e}") from e


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _api_error(e: ApiException) -> ApiError:
    body: Obj = {}
    if e.body:
        try:
            parsed = json.loads(e.body)
            body = parsed if isinstance(parsed, dict) else {}
        except (ValueError, TypeError):
            body = {}
    return ApiError(
        int(e.status or 0),
        str(body.get("reason") or e.reason or ""),
        str(body.get("message") or e.reason or ""),
        body,
    )
