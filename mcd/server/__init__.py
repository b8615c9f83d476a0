"""The machine-config-server (``mcd server``): hands a booting node its pool's rendered config
as Ignition, in the spec version the node's Ignition asks for, so the node joins already
configured instead of draining and rebooting right after joining.

Owns the HTTP side (:mod:`mcd.server.handler`, :mod:`mcd.server.listener`), what a pool
serves (:mod:`mcd.server.source`) and join tokens (:mod:`mcd.server.tokens`, beyond
upstream). The document itself is built by the pure :mod:`mcd.model.ignition.served`.
Beside :mod:`mcd.agent` and :mod:`mcd.controller`, over :mod:`mcd.cluster` and
:mod:`mcd.model`; it imports neither the agent nor the controller.
"""
