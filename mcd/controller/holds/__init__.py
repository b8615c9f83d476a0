"""The rollout policy's gates in the controller's pass: ask Prometheus for its alerts, list
the pods on the nodes about to be disrupted, and name each hold on the pool."""
