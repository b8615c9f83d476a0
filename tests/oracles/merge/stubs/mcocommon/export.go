package mcocommon

import mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

// GetMachineConfigHashedName exports the extracted getMachineConfigHashedName to main.go.
func GetMachineConfigHashedName(pool *mcfgv1.MachineConfigPool, config *mcfgv1.MachineConfig) (string, error) {
	return getMachineConfigHashedName(pool, config)
}
