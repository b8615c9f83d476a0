"""The node's boot loader and OS tooling: what it can apply (detected, never guessed) and the
kernel arguments it boots with, through GRUB's drop-ins or grubby where rpm-ostree is absent."""
