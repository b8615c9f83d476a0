"""The node's operating system: rpm-ostree (deployments, image rebase, kernel arguments), the
extensions repository, the pull secret, and ``os-release``."""
