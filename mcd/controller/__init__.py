"""The cluster half for clusters without the Machine Config Operator (``mcd controller``).

Renders each MachineConfigPool's MachineConfigs into ``rendered-<pool>-<hash>`` and rolls
it out to the pool's nodes at the pace the pool allows, as upstream's render and node
controllers do, and drains nodes for their agents (``desiredDrain`` -> ``lastAppliedDrain``,
upstream's drain controller: :mod:`mcd.controller.drain`), so that no agent needs a right to
evict. The decisions are pure (:mod:`mcd.model.pool.render`,
:mod:`mcd.model.pool.rollout`);
this package reads the cluster from informer caches, writes through
:mod:`mcd.cluster.pools` and holds a Lease so that one replica acts at a time. It never
imports :mod:`mcd.agent`: the two meet only through API objects.
"""
