"""Users of the node: the root's own ``/etc/passwd`` and ``/etc/group``, and the SSH keys and
password hash of ``core``."""
