"""Image mode (on-cluster layering): the node follows an image, not only a config (pure).

Upstream (``pkg/daemon/ocl.go``) carries the image through the update inside the
MachineConfig itself: ``embedOCLImageInMachineConfig`` records the config's own
``osImageURL`` in the annotation ``machineconfiguration.openshift.io/original-osimageurl``,
the image in ``machineconfiguration.openshift.io/ocl-osimageurl``, and makes the image
the ``osImageURL``; the ordinary OS step then rebases to it.
``extractOCLImageFromMachineConfig`` undoes that for the on-disk ``currentconfig``
(the config as the cluster has it) and ``currentimage`` (the image alone). mcd does
the same on the document bytes, so the update journal carries the image too.

An image reference is hostile input: it ends up on rpm-ostree's and podman's command
lines behind a fixed transport (``ostree-unverified-registry:``). :func:`reference_problem`
refuses control characters, a leading ``-``, a transport of its own, and anything that
is not a registry pullspec (``[host[:port]/]path[:tag][@digest]``).
"""

from __future__ import annotations

import json
import re

from mcd.model.ignition.values import control_problem
from mcd.model.text import goquote
from mcd.model.vocabulary import ANNOTATION_PREFIX

ORIGINAL_OS_IMAGE_URL = ANNOTATION_PREFIX + "original-osimageurl"
OCL_OS_IMAGE_URL = ANNOTATION_PREFIX + "ocl-osimageurl"
CURRENT_IMAGE_PATH = "/etc/machine-config-daemon/currentimage"

TRANSPORTS = (
    "ostree-unverified-registry:", "ostree-unverified-image:", "ostree-image-signed:",
    "ostree-remote-image:", "ostree-remote-registry:", "registry:", "docker://",
    "docker-archive:", "docker-daemon:", "containers-storage:", "oci:", "oci-archive:",
    "dir:", "sif:",
)  # fmt: skip
MAX_REFERENCE = 4096

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN = r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?"  # noqa: E501
_REFERENCE = re.compile(
    rf"(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*"
    r"(?::[\w][\w.-]{0,127})?"
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?"
)


def argument_problem(value: str) -> str | None:
    """Why ``value`` cannot follow mcd's fixed transport on a command line: a control
    character, a leading ``-`` (an option), a transport of its own, or an absurd length."""
    bad = control_problem(value)
    if bad:
        return bad
    if len(value) > MAX_REFERENCE:
        return f"is longer than {MAX_REFERENCE} characters"
    if value.startswith("-"):
        return "starts with '-'"
    for transport in TRANSPORTS:
        if value.startswith(transport):
            return f"has its own transport {goquote(transport)}; give a registry pullspec"
    return None


def reference_problem(value: str) -> str | None:
    """Why ``value`` cannot be used as an image pullspec, or None."""
    if not value:
        return "is empty"
    bad = argument_problem(value)
    if bad:
        return bad
    if not _REFERENCE.fullmatch(value):
        return "is not a registry pullspec ([host[:port]/]path[:tag][@digest])"
    return None


def reference_refusal(field: str, value: str) -> str | None:
    """The one-line refusal for an image reference in ``field``, or None when it is usable."""
    bad = reference_problem(value)
    if bad is None:
        return None
    return f"{field}: invalid image reference {goquote(value)}: {bad}"


def embed(document: bytes, image: str) -> bytes:
    """The MachineConfig document with ``image`` as its ``osImageURL`` (upstream
    ``embedOCLImageInMachineConfig``); the document unchanged when ``image`` is empty."""
    if not image:
        return document
    try:
        obj = json.loads(document)
    except ValueError:
        return document  # the loader words the refusal
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata", {}), dict):
        return document
    if not isinstance(obj.get("spec", {}), dict):
        return document
    meta = obj.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    spec = obj.setdefault("spec", {})
    if OCL_OS_IMAGE_URL not in annotations:
        annotations[ORIGINAL_OS_IMAGE_URL] = spec.get("osImageURL") or ""
    annotations[OCL_OS_IMAGE_URL] = image
    meta["annotations"] = annotations
    spec["osImageURL"] = image
    return json.dumps(obj, sort_keys=True).encode()


def extract(document: bytes) -> tuple[bytes, str]:
    """(the document as the cluster has it, the embedded image) — upstream
    ``extractOCLImageFromMachineConfig``; a document with no image comes back unchanged."""
    try:
        obj = json.loads(document)
    except ValueError:
        return document, ""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        return document, ""
    annotations = meta.get("annotations")
    if not isinstance(annotations, dict) or not (
        ORIGINAL_OS_IMAGE_URL in annotations or OCL_OS_IMAGE_URL in annotations
    ):
        return document, ""
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return document, ""
    annotations = dict(annotations)
    original = str(annotations.pop(ORIGINAL_OS_IMAGE_URL, "") or "")
    image = str(annotations.pop(OCL_OS_IMAGE_URL, "") or "")
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    if original:
        spec["osImageURL"] = original
    else:
        spec.pop("osImageURL", None)
    return json.dumps(obj, sort_keys=True).encode(), image


def image_of(document: bytes) -> str:
    """The image embedded in a document ('' when none)."""
    return extract(document)[1]


def layered(old_document: bytes, new_document: bytes) -> bool:
    """Upstream ``oclEnabled``: either side follows an image. In layered mode the OS
    step rebases and sets kernel arguments only: the image carries its kernel and
    packages, so kernel type and extensions are not applied on the node."""
    return bool(image_of(old_document) or image_of(new_document))


def reverting(old_document: bytes, new_document: bytes) -> bool:
    """Upstream ``revertFromOCL``: the node leaves image mode for its config's osImageURL."""
    return bool(image_of(old_document)) and not image_of(new_document)
