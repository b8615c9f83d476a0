"""A throw-away CA-less serving certificate for 127.0.0.1, made with the ``openssl`` CLI."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path


def serving_context(directory: Path) -> tuple[Path, ssl.SSLContext]:
    """``(ca.crt, server context)``: a self-signed certificate for IP 127.0.0.1 (clients
    trust it as their CA, as a service account's ``ca.crt`` names the API server's)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("openssl is not installed: it makes the fake API server's certificate")
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / "ca.crt", directory / "server.key"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return cert, context
