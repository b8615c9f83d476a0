"""Parts of a pool's status worked out beside its rollout: the nodes whose host cannot apply
the target (NodesCannotApply), careless pool input (invalid selectors, nodes in two pools) and
pinned image sets rolled up from the MachineConfigNodes (poolSynchronizersStatus)."""
