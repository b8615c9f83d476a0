"""What a change costs: node disruption policies (the cluster's and the defaults), and which
``registries.conf`` changes need no drain."""
