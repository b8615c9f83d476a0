"""Reboots the OS asks for (a sentinel file or command): the Node annotations that carry the
request and its answer, the pool's rollout-policy keys that turn their scheduling on, and the
pure choice of which nodes reboot now through the pool's free slots."""
