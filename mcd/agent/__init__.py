"""The agent: boot checks, sync loop, update transaction, drift monitor.

Composes ``mcd.host`` and ``mcd.cluster`` around plans made by ``mcd.model``.
"""
