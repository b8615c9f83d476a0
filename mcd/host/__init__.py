"""Everything that reads or changes the node, rooted at one root directory.

``/rootfs`` in the DaemonSet, ``/`` on a host, a temp dir in tests. Nothing here
reads or writes a path outside that root.
"""
