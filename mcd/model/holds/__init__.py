"""Gates before a node is disrupted (kured's blockers, as pool policy): pods on a node that
block it, and Prometheus alerts that hold the whole pool. Pure: parse, filter, decide."""
