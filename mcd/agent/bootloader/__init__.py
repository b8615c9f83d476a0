"""The agent's OS step on hosts without rpm-ostree (kernel arguments through the boot loader,
every other OS field refused by name), the OS image staged before the drain, and the checks
after the boot that should carry them."""
