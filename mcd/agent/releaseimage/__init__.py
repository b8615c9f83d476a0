"""The node's local release registry (OpenShift's NoRegistryClusterInstall) reported on its
MachineConfigNode as upstream's InternalReleaseImage manager reports it."""
