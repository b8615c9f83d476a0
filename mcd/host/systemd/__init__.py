"""systemd and its journal: the manager's interface, over D-Bus or offline, logging to journald,
and who logged in."""
