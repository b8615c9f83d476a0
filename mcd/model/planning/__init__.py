"""Moving a node between two configs: the diff, reconcilability, post-config actions and the drain
decision, the :class:`~mcd.model.planning.plan.UpdatePlan` and its description."""
