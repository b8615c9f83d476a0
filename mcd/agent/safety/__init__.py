"""What keeps an update from hurting the node: health gates, the gate's boot counter, boot retries,
a reboot owed, try mode's state, and SIGTERM protection."""
