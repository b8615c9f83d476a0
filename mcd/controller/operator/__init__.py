"""The part of upstream's machine-config-operator that mcd's controller takes over on a
cluster without it: ``machineconfiguration`` publishes the node disruption policies of
``MachineConfiguration/cluster`` (upstream ``syncMachineConfiguration``)."""
