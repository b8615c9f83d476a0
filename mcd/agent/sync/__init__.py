"""When the agent syncs and what one sync does: wake-ups, the level-triggered sync of the Node, one
agent per node, and the certificate writer's own sync."""
