"""A tiny OCI distribution registry on 127.0.0.1 for real-node tests: it serves images built
here in memory (one small layer, a config naming linux/amd64), answers ``/v2/``, manifests by
tag or digest (GET and HEAD, with ``Docker-Content-Digest``) and blobs, and records every
request path, so a test sees which host a real containerd asked."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MANIFEST = "application/vnd.oci.image.manifest.v1+json"


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _layer(name: str) -> tuple[bytes, bytes]:
    """(gzip layer, its uncompressed tar): one tiny file naming the image."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("hello")
        payload = f"hello from {name}\n".encode()
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    raw = buf.getvalue()
    return gzip.compress(raw, mtime=0), raw


class Registry:
    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}
        self.manifests: dict[str, dict[str, bytes]] = {}
        """repository -> reference (tag or digest) -> manifest bytes"""
        self.requests: list[str] = []

    def add_image(self, repository: str, tag: str) -> str:
        """An image ``repository:tag`` of its own (its layer names it: no blob is shared with
        another image); returns its manifest digest."""
        layer, raw = _layer(f"{repository}:{tag}")
        config = json.dumps({
            "architecture": "amd64", "os": "linux",
            "config": {"Cmd": ["/hello"], "Labels": {"image": f"{repository}:{tag}"}},
            "rootfs": {"type": "layers", "diff_ids": [_digest(raw)]},
        }).encode()  # fmt: skip
        manifest = json.dumps({
            "schemaVersion": 2, "mediaType": MANIFEST,
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": _digest(config), "size": len(config)},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                        "digest": _digest(layer), "size": len(layer)}],
        }).encode()  # fmt: skip
        for blob in (layer, config):
            self.blobs[_digest(blob)] = blob
        refs = self.manifests.setdefault(repository, {})
        refs[tag] = refs[_digest(manifest)] = manifest
        return _digest(manifest)

    def handler(self) -> type[BaseHTTPRequestHandler]:
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                return

            def _send(self, code: int, body: bytes, kind: str, digest: str = "") -> None:
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Docker-Distribution-API-Version", "registry/2.0")
                if digest:
                    self.send_header("Docker-Content-Digest", digest)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def do_HEAD(self) -> None:
                self.do_GET()

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                registry.requests.append(f"{self.command} {path}")
                if path in ("/v2", "/v2/"):
                    return self._send(200, b"{}", "application/json")
                parts = path.removeprefix("/v2/").split("/")
                repo, kind, ref = (
                    "/".join(parts[:-2]),
                    parts[-2] if len(parts) > 1 else "",
                    parts[-1],
                )
                if kind == "manifests" and ref in registry.manifests.get(repo, {}):
                    body = registry.manifests[repo][ref]
                    return self._send(200, body, MANIFEST, _digest(body))
                if kind == "blobs" and ref in registry.blobs:
                    body = registry.blobs[ref]
                    return self._send(200, body, "application/octet-stream", ref)
                return self._send(404, b'{"errors":[{"code":"NOT_FOUND"}]}', "application/json")

        return Handler


@contextmanager
def serving(registry: Registry, host: str = "127.0.0.1") -> Iterator[str]:
    """Serve ``registry`` on ``host`` (a free port); yields ``host:port``; stopped after."""
    server = ThreadingHTTPServer((host, 0), registry.handler())
    thread = threading.Thread(target=server.serve_forever, name="registry", daemon=True)
    thread.start()
    try:
        yield f"{host}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
