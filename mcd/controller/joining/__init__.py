"""Nodes joining the fleet: a node that booted straight into a custom pool (its served
node-annotations name that pool's rendered config) gets the pool's node labels from the
controller, so it never falls back to ``worker`` and drains and reboots right after joining
(upstream ``filterCustomPoolBootedNodes`` and ``applyCustomPoolLabels``)."""
