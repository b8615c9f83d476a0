"""The certificate writer's decisions: what the ControllerConfig puts on the node, the service-CA
rotation, and the PEM/X.509 reading they need."""
