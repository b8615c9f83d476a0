"""The node's local release registry (OpenShift's NoRegistryClusterInstall: ``iri-registry``
on ``localhost:22625``), asked what upstream's ``iriRegistry`` asks
(``pkg/daemon/internalreleaseimage/iriregistry.go``): ``/v2`` answers, the tags of
``/openshift/release-bundles`` and ``/openshift/release-images``, and whether a release's
manifest is there. HTTPS trusting the host's IRI root CA, authenticated with the kubelet's
pull secret entry for that registry, 3 s per request; errors in upstream's words."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import ssl
import urllib.error
import urllib.request

from mcd.host.errors import PathEscapeError
from mcd.host.rootfs import Root

HOST_PORT = "localhost:22625"
HOST_PORT_ENV = "MCD_IRI_REGISTRY"
"""Another ``host:port`` for the registry: for tests only (the registry's port is fixed)."""
RELEASES = "/openshift/release-images"
BUNDLES = "/openshift/release-bundles"
DATA_PATH = "/var/lib/iri-registry"
"""Exists once the feature was ever active on this node (upstream ``wasFeatureActivated``)."""
ROOT_CA = "/etc/pki/ca-trust/source/anchors/iri-root-ca.crt"
KUBELET_AUTH = "/var/lib/kubelet/config.json"
TIMEOUT = 3.0
MANIFESTS = ", ".join((
    "application/vnd.oci.image.index.v1+json", "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.docker.distribution.manifest.v2+json",
))  # fmt: skip
_PULLSPEC = re.compile(r"^([^/]+)/(.+)@(sha256:[a-f0-9]{64})$")


class RegistryError(Exception):
    pass


def host_port() -> str:
    return os.environ.get(HOST_PORT_ENV) or HOST_PORT


def activated(root: Root) -> bool:
    try:
        return os.path.isdir(root.host_path(DATA_PATH))
    except PathEscapeError:
        return False


def listening(address: str | None = None) -> bool:
    """The registry's port accepts connections (upstream ``isRegistryPortListening``)."""
    host, _, port = (address or host_port()).rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=0.1):
            return True
    except OSError:
        return False


class IriRegistry:
    def __init__(self, root: Root, address: str | None = None) -> None:
        self.root = root
        self.address = address or host_port()
        self.token = self._auth_token()
        self.context = ssl.create_default_context()
        # no IRI root CA on the host: the system's roots alone
        with contextlib.suppress(OSError, PathEscapeError, UnicodeDecodeError, ssl.SSLError):
            self.context.load_verify_locations(cadata=root.read_bytes(ROOT_CA).decode())
        self.opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=self.context)
        )

    def _auth_token(self) -> str:
        try:
            doc = json.loads(self.root.read_bytes(KUBELET_AUTH))
        except (OSError, PathEscapeError) as e:
            raise RegistryError(f"could not read {KUBELET_AUTH} for IRI registry auth: "
                                f"{getattr(e, 'strerror', None) or e}") from None  # fmt: skip
        except ValueError:
            raise RegistryError(f"could not parse {KUBELET_AUTH} for IRI registry auth") from None
        entry = ((doc.get("auths") or {}) if isinstance(doc, dict) else {}).get(self.address)
        if not isinstance(entry, dict) or not entry.get("auth"):
            raise RegistryError(f"no auth entry found for {self.address} in {KUBELET_AUTH}")
        return str(entry["auth"])

    def _query(self, endpoint: str, accept: str = "") -> bytes:
        url = f"https://{self.address}/v2{endpoint}"
        request = urllib.request.Request(url, headers={"Authorization": f"Basic {self.token}"})
        if accept:
            request.add_header("Accept", accept)
        try:
            with self.opener.open(request, timeout=TIMEOUT) as response:
                return bytes(response.read(1 << 20))
        except urllib.error.HTTPError as e:
            message = f"registry query {url} failed with code {e.code}"
            try:
                first = (json.loads(e.read(1 << 16)).get("errors") or [])[0]
                message += f". Message: {first.get('message')}. Details: {first.get('detail')}"
            except (ValueError, IndexError, AttributeError, OSError):
                pass
            raise RegistryError(message) from None
        except (urllib.error.URLError, OSError) as e:
            why = getattr(e, "reason", e)
            raise RegistryError(f"registry query {url} failed with error: {why}") from None

    def check(self) -> None:
        self._query("")

    def _tags(self, repo: str) -> list[str]:
        endpoint = f"{repo}/tags/list"
        try:
            doc = json.loads(self._query(endpoint))
        except RegistryError as e:
            raise RegistryError(
                f"error while retrieving repository tags for {endpoint}: {e}"
            ) from None
        except ValueError as e:
            raise RegistryError(
                f"error while parsing repository tags for {endpoint}: {e}"
            ) from None
        if not isinstance(doc, dict) or not doc.get("name"):
            raise RegistryError(f'error while parsing repository tags for {endpoint}: missing '
                                'or empty field "name"')  # fmt: skip
        return [str(t) for t in doc.get("tags") or []]

    def bundle_tags(self) -> list[str]:
        return self._tags(BUNDLES)

    def release_tag(self) -> str:
        tags = self._tags(RELEASES)
        if len(tags) > 1:
            raise RegistryError("only one OCP release image is currently supported")
        if not tags:
            raise RegistryError(f"no release image in {RELEASES}")
        return tags[0]

    def pull_spec(self, tag: str) -> str:
        return f"{self.address}{RELEASES}@sha256:{tag}"

    def check_image(self, pullspec: str) -> None:
        m = _PULLSPEC.match(pullspec)
        if m is None:
            raise RegistryError(f"invalid pullspec: {pullspec}")
        if m.group(1) != self.address:
            raise RegistryError(f"pullspec {pullspec} not owned by the current registry")
        endpoint = f"/{m.group(2)}/manifests/{m.group(3)}"
        try:
            self._query(endpoint, MANIFESTS)
        except RegistryError as e:
            raise RegistryError(
                f"error while checking image availability for {endpoint}: {e}"
            ) from None
