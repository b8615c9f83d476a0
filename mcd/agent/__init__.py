"""The agent: ``mcd start`` and the one-shot commands that change one node.

``daemon`` composes everything (threads, watches, the context); the rooms below it, from the
top: ``sync`` and ``boot`` (when to act), ``commands`` (one-shot cores), ``update`` (one
update, end to end), ``safety`` (what keeps an update from hurting the node), ``report`` (what
the agent tells). A room imports only rooms below it (import-linter keeps it so).
Composes ``mcd.host`` and ``mcd.cluster`` around plans made by ``mcd.model``.
"""
