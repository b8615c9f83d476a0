// Command renderhash prints the rendered-config name upstream's render controller gives a
// MachineConfig spec (pkg/controller/render/hash.go: MD5 over a fixed salt and
// ghodss/yaml.Marshal(spec)), the YAML it hashed, and the same after the spec's Ignition
// config went through json.Unmarshal/json.Marshal of Ignition's v3_5 Config struct, which is
// what MergeMachineConfigs stores in a rendered config.
//
// Input (stdin): a JSON array of {"pool": "<name>", "spec": {...MachineConfigSpec...}}.
// Output (stdout): a JSON array of {"name", "yaml", "shapedConfig", "shapedName", "error"}.
// Build and run: see README.md beside this file.
package main

import (
	"bytes"
	"crypto/md5" //nolint:gosec
	"encoding/json"
	"fmt"
	"os"

	"github.com/ghodss/yaml"

	ign35types "ign35types"
)

// salt: the 80 bytes of upstream's pkg/controller/render/hash.go.
var salt = []byte{
	16, 124, 206, 228, 139, 56, 175, 175, 79, 229, 134, 118, 157, 154, 211, 110,
	25, 93, 47, 253, 172, 106, 37, 7, 174, 13, 160, 185, 110, 17, 87, 52,
	219, 131, 12, 206, 218, 141, 116, 135, 188, 181, 192, 151, 233, 62, 126, 165,
	64, 83, 179, 119, 15, 168, 208, 197, 146, 107, 58, 227, 133, 188, 238, 26,
	33, 26, 235, 202, 32, 173, 31, 234, 41, 144, 148, 79, 6, 206, 23, 22,
}

// rawExtension behaves as k8s.io/apimachinery's runtime.RawExtension does in JSON.
type rawExtension struct {
	Raw []byte
}

func (re *rawExtension) UnmarshalJSON(in []byte) error {
	if bytes.Equal(in, []byte("null")) {
		return nil
	}
	re.Raw = append(re.Raw[0:0], in...)
	return nil
}

func (re rawExtension) MarshalJSON() ([]byte, error) {
	if re.Raw == nil {
		return []byte("null"), nil
	}
	return re.Raw, nil
}

// machineConfigSpec has the json tags of openshift/api machineconfiguration/v1
// MachineConfigSpec (vendored in machine-config-operator).
type machineConfigSpec struct {
	OSImageURL                     string       `json:"osImageURL"`
	BaseOSExtensionsContainerImage string       `json:"baseOSExtensionsContainerImage"`
	Config                         rawExtension `json:"config,omitempty"`
	KernelArguments                []string     `json:"kernelArguments"`
	Extensions                     []string     `json:"extensions"`
	FIPS                           bool         `json:"fips"`
	KernelType                     string       `json:"kernelType"`
}

type input struct {
	Pool string          `json:"pool"`
	Spec json.RawMessage `json:"spec"`
}

type output struct {
	Name         string          `json:"name"`
	YAML         string          `json:"yaml"`
	ShapedConfig json.RawMessage `json:"shapedConfig"`
	ShapedName   string          `json:"shapedName"`
	Error        string          `json:"error,omitempty"`
}

func hashedName(pool string, spec machineConfigSpec) (string, string, error) {
	data, err := yaml.Marshal(spec)
	if err != nil {
		return "", "", err
	}
	h := md5.New() //nolint:gosec
	h.Write(salt)
	h.Write(data)
	return fmt.Sprintf("rendered-%s-%x", pool, h.Sum(nil)), string(data), nil
}

func one(in input) output {
	var spec machineConfigSpec
	if err := json.Unmarshal(in.Spec, &spec); err != nil {
		return output{Error: err.Error()}
	}
	name, text, err := hashedName(in.Pool, spec)
	if err != nil {
		return output{Error: err.Error()}
	}
	out := output{Name: name, YAML: text, ShapedConfig: json.RawMessage("null")}
	if spec.Config.Raw == nil {
		return out
	}
	var ign ign35types.Config
	if err := json.Unmarshal(spec.Config.Raw, &ign); err != nil {
		out.Error = err.Error()
		return out
	}
	shaped, err := json.Marshal(ign)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	out.ShapedConfig = shaped
	spec.Config.Raw = shaped
	out.ShapedName, _, err = hashedName(in.Pool, spec)
	if err != nil {
		out.Error = err.Error()
	}
	return out
}

func main() {
	var inputs []input
	if err := json.NewDecoder(os.Stdin).Decode(&inputs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	outputs := make([]output, 0, len(inputs))
	for _, in := range inputs {
		outputs = append(outputs, one(in))
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(outputs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
