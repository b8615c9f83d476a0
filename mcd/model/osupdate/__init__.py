"""What a config asks of rpm-ostree: the OS image (image mode), extensions and their packages,
kernel arguments."""
