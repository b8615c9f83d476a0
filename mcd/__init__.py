"""mcd: a machine-config-daemon.

Sub-packages, in layer order (checked by import-linter, see pyproject.toml):

- ``mcd.cli``: click commands, the only place that turns errors into exit codes.
- ``mcd.agent``: the loop and the update transaction.
- ``mcd.host`` / ``mcd.cluster``: effects on the node / calls to the API server.
- ``mcd.model``: pure parse, validate, diff and plan. No I/O.
"""

__version__ = "0.1.0"
