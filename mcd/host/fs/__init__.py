"""The node's filesystem, safely: atomic writes inside the root, backups of originals, state
readable by root alone, inotify, and Go's file modes."""
