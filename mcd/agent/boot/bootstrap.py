"""The install-time handoff (upstream ``loadNodeAnnotations`` and the bootstrap branch of
``checkStateOnFirstRun``).

The Machine Config Server lays down ``/etc/machine-config-daemon/node-annotations.json``
(``currentConfig``, ``desiredConfig``, ``state``: the rendered config the node was
installed with). On its first start on a Node without ``currentConfig``, the
agent copies those annotations onto the Node, so the first update is planned
against the install config and validation and the drift monitor watch it from
the first boot. Without the file, a ``currentconfig`` on disk names the config
(upstream's best effort). While the file exists and the booted OS image is not
the config's, the agent rebases to it and reboots first (the bootstrap pivot).
Once the node is validated, the file is renamed to ``node-annotation.json.bak``
(upstream's spelling), kept for debugging.
"""

from __future__ import annotations

import json
import logging

from mcd.agent.update.context import AGENT_LOCK_WAIT, Config, Context, SyncError
from mcd.agent.update.handles import current_config_on_disk
from mcd.agent.update.transaction import Outcome, Transaction, UpdateError
from mcd.agent.update.trigger import before_reboot
from mcd.cluster.api import Obj
from mcd.cluster.node import annotations_of
from mcd.host.errors import HostError
from mcd.host.fs import fsops
from mcd.host.lock import LockBusy, writer_lock
from mcd.model.errors import ConfigError
from mcd.model.machineconfig import load_machine_config
from mcd.model.osupdate.imagemode import embed, reference_refusal
from mcd.model.planning.plan import make_plan
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


def with_bootstrap_image(ctx: Context, node: Obj, current: Config) -> Config:
    """Image mode at install: while bootstrapping, the node's target is its ``currentImage``
    annotation (from ``node-annotations.json``) when it has one, as upstream; the reference
    is gated like ``desiredImage``."""
    image = annotations_of(node).get(Annotation.CURRENT_IMAGE, "")
    if not (image and bootstrapping(ctx)) or current.mc.ocl_image:
        return current
    refusal = reference_refusal(f"node annotation {Annotation.CURRENT_IMAGE}", image)
    if refusal:
        raise SyncError(refusal)
    document = embed(current.document, image)
    return Config(load_machine_config(document), document, current.identity)


def bootstrap_pivot(ctx: Context, current: Config) -> bool:
    """Upstream's bootstrap branch: the install image is not the config's, so rebase to the
    config's image and reboot (``Bootstrap pivot required to: ...``); True when started.

    The update keeps every file of the config (the old side is the same document with the
    booted image), so a rollback restores exactly what is on disk.
    """
    host = ctx.host
    target = current.mc.os_image_url
    if not (bootstrapping(ctx) and host.ostree and host.rpm is not None and target):
        return False
    booted = host.rpm.booted_image()
    if booted == target:
        return False
    log.info("Bootstrap pivot required to: %s", target)
    doc = json.loads(current.document)
    doc.setdefault("spec", {})["osImageURL"] = booted
    old_doc = json.dumps(doc).encode()
    old = load_machine_config(old_doc)
    plan = make_plan(old, current.mc, legacy=True, node_fips=host.fips_for(current.mc))
    try:
        with writer_lock(host.root, f"mcd start: bootstrap pivot to {target}", AGENT_LOCK_WAIT):
            outcome = Transaction(
                host, plan, old_doc, current.document, preflight=False,
                before_reboot=lambda why: before_reboot(ctx, why), record=ctx.events.record,
            ).run()  # fmt: skip
    except (UpdateError, LockBusy) as e:
        raise SyncError(str(e)) from e
    if outcome is Outcome.REBOOTING:
        ctx.reboot_queued = True
    return True
