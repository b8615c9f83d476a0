"""What the agent does once per boot or once per node: the first sync after start, the install-time
bootstrap handoff, firstboot, and the kubelet re-bootstrap."""
