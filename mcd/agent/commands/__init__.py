"""The cores of the one-shot commands: ``once-from``, ``restore``, ``pivot``, ``status`` and
``recover``."""
