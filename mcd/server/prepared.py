"""The served bytes, prepared once and reused until an input changes (beyond upstream, whose
server builds and converts the document on every request).

A body is kept per (pool, spec version), with the inputs it was built from: the rendered
config's name and resourceVersion, the kubelet CA and the bootstrap kubeconfig. A request
whose inputs are the kept ones gets the kept bytes; any change (a new rendered config, the
same one written again, a rotated CA or token) builds the body anew, once: requests for
the same pool and version wait for that build rather than each building it. A join token's
use, which differs per node, is put into the kept body's node-annotations file
(:func:`mcd.model.ignition.served.with_annotations`), not built again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from mcd.model.ignition.served import Extras, served_config, with_annotations

log = logging.getLogger(__name__)

Build = Callable[[Mapping[str, Any], str, str, Extras], bytes]
_Inputs = tuple[str, str, bytes, bytes]


class Prepared:
    """Served bodies by (pool, spec version); thread-safe."""

    def __init__(self, build: Build = served_config) -> None:
        self.build = build
        self.builds = 0
        """Bodies built so far (for tests and the bench: a hit builds nothing)."""
        self._lock = threading.Lock()
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._bodies: dict[tuple[str, str], tuple[_Inputs, bytes]] = {}

    def body(
        self,
        pool: str,
        machine_config: Mapping[str, Any],
        config_name: str,
        version: str,
        extras: Extras,
    ) -> bytes:
        """The document for ``pool`` in spec ``version`` (raises what ``build`` raises)."""
        meta = machine_config.get("metadata") or {}
        version_of = str(meta.get("resourceVersion") or "")
        if not version_of:  # nothing tells a change apart: never reuse
            return self.build(machine_config, config_name, version, extras)
        inputs = (config_name, version_of, extras.kubelet_ca, extras.kubeconfig)
        key = (pool, version)
        bare = Extras(kubelet_ca=extras.kubelet_ca, kubeconfig=extras.kubeconfig)
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            kept = self._bodies.get(key)
            if kept is not None and kept[0] == inputs:
                plain = kept[1]
            else:
                plain = self.build(machine_config, config_name, version, bare)
                self._bodies[key] = (inputs, plain)
                self.builds += 1
                log.info(
                    "Prepared %s for pool %r (spec %s, resourceVersion %s, %d bytes)",
                    config_name, pool, version, version_of, len(plain),
                )  # fmt: skip
        if not extras.annotations:
            return plain
        annotated = with_annotations(plain, config_name, extras.annotations)
        return annotated if annotated is not None else self.build(
            machine_config, config_name, version, extras
        )  # fmt: skip

    def forget(self, pool: str) -> None:
        """Drop what was kept for a pool that is gone."""
        with self._lock:
            for key in [k for k in self._bodies if k[0] == pool]:
                del self._bodies[key]
                self._locks.pop(key, None)
