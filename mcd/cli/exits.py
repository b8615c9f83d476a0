"""The one exit-code table of every command: :data:`TABLE`, the constants below, and the
README's "Output and exit codes" (a test keeps them equal). A module of its own so that
``mcd --help`` loads nothing else to know them.

Which code a problem gets depends on what it is, never on the command:

- a flag or argument click cannot take (unknown, missing, not one of the choices, not a
  number, not a duration, out of range): usage, 64, with click's ``Usage:`` lines;
- input that is well formed but cannot be used (a file or directory that does not exist, a
  kubeconfig or context that cannot be read, an unreachable server): 1, one ``error:`` line
  naming it;
- 2 keeps the meaning upstream-compatible commands give it (``mcd join``: 0 joined, 1
  failed, 2 the config cannot be applied here), which is why usage is not click's own 2.
"""

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_MISMATCH = 2
EXIT_USAGE = 64
EXIT_UNCHANGED = 77
EXIT_UPSTREAM_RUNS = 78
EXIT_INTERRUPTED = 130
EXIT_AUXILIARY = 255
EXIT_BAD_INPUT = EXIT_ERROR
EXIT_UNRECONCILABLE = EXIT_MISMATCH

TABLE: dict[int, str] = {
    EXIT_OK: "done: reconcilable, matching, applied (or the reboot queued or skipped), "
    "`status --wait`: Done",
    EXIT_ERROR: "error: bad, missing or unreadable input (a file, a kubeconfig, a context), an "
    "unreachable server, a failed update (rolled back), `status --wait`: Unreconcilable "
    "or timed out",
    EXIT_MISMATCH: "not reconcilable (`plan`, `once-from`, `join`) or not matching (`validate`, "
    "`diff --exit-code`, `status --wait`: Degraded)",
    EXIT_USAGE: "usage: an unknown option, a missing argument, a flag value that is not of its "
    "kind (not a duration, a number or one of the choices), in every command "
    "(sysexits' `EX_USAGE`; click's own 2 would read as \"not reconcilable\")",
    EXIT_UNCHANGED: "`pivot --unchanged-exit-77`: already on the image",
    EXIT_UPSTREAM_RUNS: "`controller`: upstream's machine-config-controller runs on the cluster, "
    "or cannot be looked for (sysexits' `EX_CONFIG`)",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C) during `status --watch` or `status --wait`, as a "
    "shell reports SIGINT",
    EXIT_AUXILIARY: "`start`: the kubelet was re-bootstrapped after an x509 error with its "
    "restart deferred (upstream's `ErrAuxiliary`); the pod restarts the agent",
}
"""Every code a command exits with, and what it means (README "Output and exit codes")."""
