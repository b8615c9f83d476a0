"""A MachineConfig on the node's disk: files and units written, stale ones removed, targets judged
before any write, the on-disk check, and the certificates."""
