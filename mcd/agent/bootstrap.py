"""The install-time handoff (upstream ``loadNodeAnnotations`` and the bootstrap branch of
``checkStateOnFirstRun``).

The Machine Config Server lays down ``/etc/machine-config-daemon/node-annotations.json``
(``currentConfig``, ``desiredConfig``, ``state``: the rendered config the node was
installed with). On its first start on a Node without ``currentConfig``, the
agent copies those annotations onto the Node, so the first update is planned
against the install config and validation and the drift monitor watch it from
the first boot. Without the file, a ``currentconfig`` on disk names the config
(upstream's best effort). Once the node is validated, the file is renamed to
``node-annotation.json.bak`` (upstream's spelling), kept for debugging.
"""

from __future__ import annotations

import json
import logging

from mcd.agent.handles import current_config_on_disk
from mcd.agent.update import Context, SyncError
from mcd.cluster.api import Obj
from mcd.cluster.node import annotations_of
from mcd.host import fsops
from mcd.host.errors import HostError
from mcd.model.errors import ConfigError
from mcd.model.text import goquote
from mcd.model.vocabulary import Annotation

log = logging.getLogger(__name__)

INITIAL_ANNOTATIONS = "/etc/machine-config-daemon/node-annotations.json"
INITIAL_ANNOTATIONS_BAK = "/etc/machine-config-daemon/node-annotation.json.bak"


def load_node_annotations(ctx: Context, node: Obj) -> Obj:
    """The Node with its initial annotations set when it has no ``currentConfig`` yet."""
    if annotations_of(node).get(Annotation.CURRENT_CONFIG):
        return node
    root = ctx.host.root
    log.info(
        "No %s annotation on node %s, in cluster bootstrap, loading initial node annotation "
        "from %s", Annotation.CURRENT_CONFIG, ctx.node_name, INITIAL_ANNOTATIONS,
    )  # fmt: skip
    try:
        data = root.read_bytes(INITIAL_ANNOTATIONS)
    except FileNotFoundError:
        try:
            on_disk = current_config_on_disk(root)
        except (ConfigError, OSError, HostError):
            on_disk = None
        if on_disk is None:
            return node
        name = on_disk[0].name
        log.info("Setting initial node config based on current configuration on disk: %s", name)
        return ctx.writer.set_annotations({Annotation.CURRENT_CONFIG: name})
    except (OSError, HostError) as e:
        raise SyncError(
            f"failed to read initial annotations from {goquote(INITIAL_ANNOTATIONS)}: {e}"
        ) from e
    try:
        initial = json.loads(data)
        if not isinstance(initial, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in initial.items()
        ):
            raise ValueError("expected an object of strings")
    except ValueError as e:
        raise SyncError(f"failed to unmarshal initial annotations: {e}") from e
    log.info("Setting initial node config: %s", initial.get(Annotation.CURRENT_CONFIG, ""))
    return ctx.writer.set_annotations(initial)


def bootstrapping(ctx: Context) -> bool:
    return ctx.host.root.exists(INITIAL_ANNOTATIONS)


def finish_bootstrap(ctx: Context) -> None:
    """The node is on its install config: keep the initial annotations only as a backup."""
    root = ctx.host.root
    if not root.exists(INITIAL_ANNOTATIONS):
        return
    log.info("No bootstrap pivot required; unlinking bootstrap node annotations")
    fsops.copy_preserving(root, INITIAL_ANNOTATIONS, INITIAL_ANNOTATIONS_BAK)
    fsops.remove(root, INITIAL_ANNOTATIONS)
