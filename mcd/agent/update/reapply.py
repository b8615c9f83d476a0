"""The post-config actions run again after a failed health gate's rollback (the files are the
old ones again; the services must read them again)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from mcd.host.systemd.manager import SystemdError, SystemdManager
from mcd.model.disruption.policy import Action, ActionType
from mcd.model.planning.actions import executed_actions

log = logging.getLogger(__name__)


def rerun_actions(systemd: SystemdManager, actions: Sequence[Action], offline: bool) -> None:
    """Reload, restart and daemon-reload as planned; a unit that cannot reload (the new
    config killed it) is restarted instead, so it runs again on the old files."""
    if offline and not systemd.live:
        return  # nothing runs from an offline root; the old files are what it boots
    for action in executed_actions(tuple(actions)):
        service = action.service or ""
        log.info("Rollback: performing post config change action %s again", action)
        if action.type is ActionType.DAEMON_RELOAD:
            systemd.daemon_reload()
        elif action.type is ActionType.RESTART:
            systemd.restart(service)
        elif action.type is ActionType.RELOAD:
            try:
                systemd.reload(service)
            except SystemdError as e:
                log.warning("Reloading %s failed (%s); restarting it instead", service, e)
                systemd.restart(service)
