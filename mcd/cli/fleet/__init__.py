"""``mcd status --cluster``: the screen to read first. ``command`` reads the pools, Nodes,
agent pods and Leases (and Prometheus' alerts when asked) and prints; ``report`` works out,
as a pure function of those objects, each pool's row, the alerts that would fire and the next
step; ``shapes`` holds what it says; ``agents`` judges whether each node's agent runs."""
