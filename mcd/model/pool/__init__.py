"""Pools of nodes: MachineConfigPools and their members, rendering a pool's MachineConfigs, rollout
decisions and maintenance windows."""
