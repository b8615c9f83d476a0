"""Health checks that look at the node itself: the units a config enables, the admin's required
checks, and the kubelet's health endpoint."""
