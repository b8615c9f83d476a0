"""The controller's half of the reboots a node's OS asks for: read each pool's OS reboot
policy, hand the rollout the nodes that wait (so the same slots, windows, canary and gates
decide), write the requests the rollout chose and say on the pool why the others wait."""
