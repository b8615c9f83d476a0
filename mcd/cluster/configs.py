"""MachineConfigs, read by name (custom resource ``machineconfiguration.openshift.io/v1``)."""

from __future__ import annotations

from mcd.cluster.api import ApiError, Kube, Obj

MACHINECONFIGS = "/apis/machineconfiguration.openshift.io/v1/machineconfigs"


class MachineConfigNotFound(Exception):
    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f'machineconfig.machineconfiguration.openshift.io "{name}" not found')


def get_machine_config(kube: Kube, name: str) -> Obj:
    """The MachineConfig object as a dict; :class:`MachineConfigNotFound` when it does not exist."""
    try:
        return kube.request("GET", f"{MACHINECONFIGS}/{name}")
    except ApiError as e:
        if e.status == 404:
            raise MachineConfigNotFound(name) from e
        raise
