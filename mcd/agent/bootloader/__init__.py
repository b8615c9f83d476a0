"""The agent's OS step on hosts without rpm-ostree (kernel arguments through the boot loader,
every other OS field refused by name) and the checks after the boot that should carry them."""
