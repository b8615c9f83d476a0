"""One update, from ``desiredConfig`` to Done: the trigger, the transaction and its journal, resume
after a kill, the target check, the gate after the boot, and progress reporting."""
