"""The exit codes of every command (the table is in ``mcd.cli.common``'s docstring and the
README). A module of its own so that ``mcd --help`` loads nothing else to know them."""

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_MISMATCH = 2
EXIT_USAGE = 64
EXIT_BAD_INPUT = EXIT_ERROR
EXIT_UNRECONCILABLE = EXIT_MISMATCH
