// Command merge renders sets of MachineConfigs as upstream's render controller does, by
// calling upstream's own code: ValidateMachineConfig, MergeMachineConfigs and
// getMachineConfigHashedName are extracted unchanged from machine-config-operator's
// pkg/controller/common/helpers.go and pkg/controller/render/hash.go into package
// mcocommon at run time (extract.go; see README.md), next to its ignition_converter.go and
// constants.go, and built against the Ignition, ign-converter, clarketm/json and ghodss/yaml
// sources machine-config-operator vendors.
//
// Input (stdin): a JSON array of {"pool", "configs": [MachineConfig...], "base": [os, ext]}.
// Output (stdout): a JSON array of {"name", "spec", "error"}: the rendered config's name and
// spec (its config as stored, clarketm/json of Ignition's v3_5 Config), or upstream's error.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"mcocommon"
)

type input struct {
	Pool    string                  `json:"pool"`
	Configs []*mcfgv1.MachineConfig `json:"configs"`
	Base    [2]string               `json:"base"`
}

type output struct {
	Name  string                    `json:"name,omitempty"`
	Spec  *mcfgv1.MachineConfigSpec `json:"spec,omitempty"`
	Error string                    `json:"error,omitempty"`
}

// render follows generateRenderedMachineConfig (pkg/controller/render/render_controller.go)
// from its validation on; the version-annotation gates before it concern the controller's
// own rollout, not the merge.
func render(in input) output {
	pool := &mcfgv1.MachineConfigPool{}
	pool.Name = in.Pool
	cconfig := &mcfgv1.ControllerConfig{}
	cconfig.Spec.BaseOSContainerImage = in.Base[0]
	cconfig.Spec.BaseOSExtensionsContainerImage = in.Base[1]
	for _, config := range in.Configs {
		if err := mcocommon.ValidateMachineConfig(config.Spec); err != nil {
			return output{Error: err.Error()}
		}
	}
	merged, err := mcocommon.MergeMachineConfigs(in.Configs, cconfig, nil)
	if err != nil {
		return output{Error: err.Error()}
	}
	name, err := mcocommon.GetMachineConfigHashedName(pool, merged)
	if err != nil {
		return output{Error: err.Error()}
	}
	return output{Name: name, Spec: &merged.Spec}
}

func main() {
	var inputs []json.RawMessage
	if err := json.NewDecoder(os.Stdin).Decode(&inputs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	outputs := make([]output, 0, len(inputs))
	for _, raw := range inputs {
		var in input
		if err := json.Unmarshal(raw, &in); err != nil {
			// Go's types refuse it (the API server's schema would too)
			outputs = append(outputs, output{Error: "decoding: " + err.Error()})
			continue
		}
		outputs = append(outputs, render(in))
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(outputs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
