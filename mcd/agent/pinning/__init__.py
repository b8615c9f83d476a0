"""PinnedImageSets on this node: the pool's sets read from the cluster, their images pulled
through the CRI, CRI-O told to keep them, and the MachineConfigNode's report."""
