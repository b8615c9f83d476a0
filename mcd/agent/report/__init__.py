"""What the agent tells without changing the node: metrics, the Node's state annotations, the
config drift monitor and the side watchers."""
