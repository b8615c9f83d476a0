"""Wire strings shared with the upstream daemon: annotation keys, states, paths.

Runbooks written for the upstream machine-config-daemon rely on these exact values.
"""

from __future__ import annotations

from enum import StrEnum

ANNOTATION_PREFIX = "machineconfiguration.openshift.io/"


class Annotation(StrEnum):
    CURRENT_CONFIG = ANNOTATION_PREFIX + "currentConfig"
    DESIRED_CONFIG = ANNOTATION_PREFIX + "desiredConfig"
    STATE = ANNOTATION_PREFIX + "state"
    REASON = ANNOTATION_PREFIX + "reason"
    DESIRED_DRAIN = ANNOTATION_PREFIX + "desiredDrain"
    LAST_APPLIED_DRAIN = ANNOTATION_PREFIX + "lastAppliedDrain"
    POST_CONFIG_ACTION = ANNOTATION_PREFIX + "post-config-action"
    CONTROL_PLANE_TOPOLOGY = ANNOTATION_PREFIX + "controlPlaneTopology"
    CURRENT_IMAGE = ANNOTATION_PREFIX + "currentImage"  # image mode: the image the node is on
    DESIRED_IMAGE = ANNOTATION_PREFIX + "desiredImage"  # image mode: set by the controller
    SSH = ANNOTATION_PREFIX + "ssh"  # "accessed": someone logged in since boot (login monitor)


SSH_ACCESSED = "accessed"


class NodeState(StrEnum):
    DONE = "Done"
    WORKING = "Working"
    DEGRADED = "Degraded"
    UNRECONCILABLE = "Unreconcilable"
    REBOOTING = "Rebooting"


SINGLE_REPLICA = "SingleReplica"
"""configv1.SingleReplicaTopologyMode: the node controller copies the Infrastructure's
``controlPlaneTopology`` onto each Node; on a single-node cluster nothing drains."""


def drain_required(annotations: dict[str, str]) -> bool:
    """Upstream ``drainRequired``: no drain on a single-node (SingleReplica) cluster."""
    return annotations.get(Annotation.CONTROL_PLANE_TOPOLOGY, "") != SINGLE_REPLICA


REASON_LIMIT = 2000
"""Upstream writes the ``reason`` annotation with ``%.2000s``."""

EMPTY_CONFIG_NAME = "mco-empty-mc"

FORCE_FILE = "/run/machine-config-daemon-force"
CURRENT_CONFIG_PATH = "/etc/machine-config-daemon/currentconfig"
SSH_KEY_PATH = "/home/core/.ssh/authorized_keys.d/ignition"  # core's keys, written by mcd
ORIG_DIR = "/etc/machine-config-daemon/orig"
NOORIG_DIR = "/etc/machine-config-daemon/noorig"
SYSTEMD_UNIT_DIR = "/etc/systemd/system"
REGISTRIES_CONF = "/etc/containers/registries.conf"
KUBELET_CA = "/etc/kubernetes/kubelet-ca.crt"
CLOUD_CA_BUNDLE = "/etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem"
INTERNAL_REGISTRY_PULL_SECRET = "/etc/mco/internal-registry-pull-secret.json"
USER_CA_BUNDLE = "/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt"
CRIO_RUNTIME = "cri-o"
CONTAINERD_RUNTIME = "containerd"
"""The container runtimes mcd knows, as the kubelet names them in ``containerRuntimeVersion``."""

VALIDATION_IGNORED_PATHS = frozenset({KUBELET_CA, CLOUD_CA_BUNDLE, INTERNAL_REGISTRY_PULL_SECRET})
"""Files owned by the certificate writer; never validated against a MachineConfig."""


def drain_request(config_name: str) -> str:
    """Value of ``desiredDrain`` asking the controller to drain for ``config_name``."""
    return f"drain-{config_name}"


def uncordon_request(config_name: str) -> str:
    """Value of ``desiredDrain`` asking the controller to uncordon after ``config_name``."""
    return f"uncordon-{config_name}"


def unit_path(unit_name: str) -> str:
    return f"{SYSTEMD_UNIT_DIR}/{unit_name}"


def dropin_path(unit_name: str, dropin_name: str) -> str:
    return f"{SYSTEMD_UNIT_DIR}/{unit_name}.d/{dropin_name}"
