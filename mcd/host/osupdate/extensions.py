"""The extensions repository, extracted from ``baseOSExtensionsContainerImage`` (upstream
``ExtractExtensionsImage``/``addExtensionsRepo``).

rpm-ostree installs extension packages (usbguard, kerberos, ...) from a yum
repository that ships inside the release's extensions image. Upstream, and mcd
with it: make ``/run/mco-extensions/``, a temp dir ``os-extensions-content-*`` in
it; pull the image with podman unless it is in local storage already
(``podman images --format=json --filter reference=IMG``; ``nice -- ionice -c 3 podman
pull -q [--authfile /var/lib/kubelet/config.json] IMG``, 6 tries); ``podman create --net=none
--annotation=org.openshift.machineconfigoperator.pivot=true --name
ostree-container-pivot-UUID IMG``, ``podman cp CID:/ DIR`` (niced, 6 tries), ``chcon -R -t
var_run_t DIR``; kill and remove the container; write
``/etc/yum.repos.d/coreos-extensions.repo`` pointing at
``DIR/usr/share/rpm-ostree/extensions/``. When the OS step is over, the repo file
and the extracted tree are removed, whatever happened.

An image that cannot be read is a :class:`ExtensionsImageError` naming the image
and the field (``spec.baseOSExtensionsContainerImage``); so is an image with no
extensions repository in it (upstream lets rpm-ostree find that out package by
package). podman runs inside the root (``chroot``) when the root is a mounted
host that carries it, as rpm-ostree does.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from mcd.host.errors import HostError
from mcd.host.fs import fsops
from mcd.host.osupdate.pullsecret import KUBELET_AUTH_FILE
from mcd.host.osupdate.rpmostree import RETRY_ENV, Retry
from mcd.host.rootfs import Root
from mcd.host.runner import CommandError, Runner
from mcd.model.text import goquote

log = logging.getLogger(__name__)

FIELD = "spec.baseOSExtensionsContainerImage"
CONTENT_BASE_DIR = "/run/mco-extensions"
CONTENT_PREFIX = "os-extensions-content-"
REPO_FILE = "/etc/yum.repos.d/coreos-extensions.repo"
REPO_SUBDIR = "usr/share/rpm-ostree/extensions"
PIVOT_NAME_PREFIX = "ostree-container-pivot-"
SELINUX_ENFORCE = "/sys/fs/selinux/enforce"
PODMAN_TRIES = 6  # upstream numRetriesNetCommands (5) + 1
PIVOT_ANNOTATION = "--annotation=org.openshift.machineconfigoperator.pivot=true"


class ExtensionsImageError(HostError):
    """The extensions image could not be pulled or read; nothing was installed."""


def _retry() -> Retry:
    first = 5.0 if RETRY_ENV not in os.environ else Retry.from_env().initial
    return Retry(attempts=PODMAN_TRIES, initial=first)


def repo_content(content_dir: str) -> bytes:
    """Upstream ``addExtensionsRepo``'s file, byte for byte."""
    return (
        "[coreos-extensions]\nenabled=1\nmetadata_expire=1m\nbaseurl="
        + content_dir
        + "/usr/share/rpm-ostree/extensions/\ngpgcheck=0\nskip_if_unavailable=False\n"
    ).encode()


class Podman:
    def __init__(
        self, root: Root, runner: Runner | None = None, retry: Retry | None = None
    ) -> None:
        self.root = root
        self.runner = runner or Runner()
        self.chrooted = root.path != "/" and root.exists("/usr/bin/podman")
        self.retry = retry or _retry()

    def path_arg(self, node_path: str) -> str:
        """A node path as podman sees it (inside the root when chrooted)."""
        return node_path if self.chrooted else self.root.host(node_path)

    def run(self, *args: str) -> str:
        argv = ["podman", *args]
        if self.chrooted:
            argv = ["chroot", self.root.path, *argv]
        return self.runner.run(argv).stdout

    def background(self, *args: str) -> str:
        """Upstream ``RunExtBackground``: at ``nice``/``ionice -c 3`` priority, 6 tries, 5 s
        doubling between them (``MCD_REBASE_RETRY_SECONDS`` sets the first delay)."""
        argv = ["nice", "--", "ionice", "-c", "3", "podman", *args]
        if self.chrooted:
            argv = ["chroot", self.root.path, *argv]
        delay = self.retry.initial
        for attempt in range(1, PODMAN_TRIES + 1):
            try:
                return self.runner.run(argv).stdout
            except CommandError as e:
                if attempt == PODMAN_TRIES:
                    raise
                log.warning("podman %s failed: %s; retrying in %gs...", args[0], e, delay)
                self.retry.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")

    def quiet(self, *args: str) -> None:
        try:
            self.run(*args)
        except HostError as e:
            log.debug("ignored: %s", e)

    def has_image(self, image: str) -> bool:
        out = self.run("images", "--format=json", "--filter", f"reference={image}")
        try:
            return bool(json.loads(out or "[]"))
        except ValueError:
            return False


def extract(root: Root, image: str, podman: Podman) -> str:
    """Pull and copy ``image`` into a fresh content dir; return that dir (a node path)."""
    fsops.ensure_dir(root, CONTENT_BASE_DIR, 0o755)
    host_base = root.host_path(CONTENT_BASE_DIR)
    content = (
        CONTENT_BASE_DIR
        + "/"
        + os.path.basename(tempfile.mkdtemp(prefix=CONTENT_PREFIX, dir=host_base))
    )
    try:
        if not podman.has_image(image):
            auth = ["--authfile", KUBELET_AUTH_FILE] if root.exists(KUBELET_AUTH_FILE) else []
            podman.background("pull", "-q", *auth, image)
    except (CommandError, HostError) as e:
        remove_content(root, content)
        raise ExtensionsImageError(
            f"error pulling extensions image {image} ({FIELD}): {_detail(e)}"
        ) from e
    name = PIVOT_NAME_PREFIX + str(uuid.uuid4())
    try:
        shutil.rmtree(root.host(content))  # podman cp makes it, as upstream
        cid = podman.run("create", "--net=none", PIVOT_ANNOTATION, "--name", name, image).strip()
        try:
            podman.background("cp", f"{cid}:/", podman.path_arg(content))
        finally:
            podman.quiet("kill", name)
            podman.quiet("rm", "-f", name)
        if root.exists(SELINUX_ENFORCE):  # SELinux on: rpm-ostreed may read only var_run_t
            chcon = ["chcon", "-R", "-t", "var_run_t", podman.path_arg(content)]
            podman.runner.run(["chroot", root.path, *chcon] if podman.chrooted else chcon)
    except (CommandError, HostError, OSError) as e:
        remove_content(root, content)
        raise ExtensionsImageError(
            f"error extracting extensions image {image} ({FIELD}): {_detail(e)}"
        ) from e
    if not os.path.isdir(root.host(content + "/" + REPO_SUBDIR)):
        remove_content(root, content)
        raise ExtensionsImageError(
            f"extensions image {image} ({FIELD}) has no extensions repository "
            f"(/{REPO_SUBDIR}/ is missing)"
        )
    return content


def remove_content(root: Root, content: str) -> None:
    try:
        fsops.remove(root, content)
    except OSError as e:
        log.warning("Could not remove %s: %s", content, e)


@contextmanager
def repository(root: Root, image: str, podman: Podman | None = None) -> Iterator[str]:
    """The extensions repository from ``image`` for the ``with`` block; yields its dir."""
    content = extract(root, image, podman or Podman(root))
    try:
        fsops.write_file(root, REPO_FILE, repo_content(content))
        log.info("Extensions repository from %s at %s", image, content)
        yield content
    finally:
        try:
            fsops.remove_file(root, REPO_FILE)
        except OSError as e:
            log.warning("Could not remove %s: %s", REPO_FILE, e)
        remove_content(root, content)


def _detail(e: Exception) -> str:
    text = str(e)
    return text.removeprefix("error running ")


def installed(root: Root, package: str, runner: Runner | None = None) -> bool:
    """Upstream ``execRpmQuery``: ``rpm -q`` in the booted root; exit 1 is "not installed",
    anything else a failure to query."""
    argv = ["rpm", "-q", package]
    if root.path != "/" and root.exists("/usr/bin/rpm"):
        argv = ["chroot", root.path, *argv]
    try:
        result = (runner or Runner()).run(argv, check=False)
    except CommandError as e:
        raise HostError(f"failed to query RPM database for package {goquote(package)}: {e}") from e
    if result.returncode == 0:
        return True
    if result.returncode == 1:
        return False
    output = (result.stdout + result.stderr).strip()
    raise HostError(
        f"failed to query RPM database for package {goquote(package)}: "
        f"exit status {result.returncode}: {output}"
    )
