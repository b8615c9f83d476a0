// Package v1 stands in for github.com/openshift/api/machineconfiguration/v1: only the
// fields MergeMachineConfigs, ValidateMachineConfig and getMachineConfigHashedName read,
// with the json tags of openshift/api (types.go, types_osimagestream.go).
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

type MachineConfig struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              MachineConfigSpec `json:"spec"`
}

type MachineConfigSpec struct {
	OSImageURL                     string               `json:"osImageURL"`
	BaseOSExtensionsContainerImage string               `json:"baseOSExtensionsContainerImage"`
	Config                         runtime.RawExtension `json:"config,omitempty"`
	KernelArguments                []string             `json:"kernelArguments"`
	Extensions                     []string             `json:"extensions"`
	FIPS                           bool                 `json:"fips"`
	KernelType                     string               `json:"kernelType"`
}

type MachineConfigPool struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

type ControllerConfig struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ControllerConfigSpec `json:"spec"`
}

type ControllerConfigSpec struct {
	BaseOSContainerImage           string `json:"baseOSContainerImage"`
	BaseOSExtensionsContainerImage string `json:"baseOSExtensionsContainerImage"`
}

type ImageDigestFormat string

type OSImageStreamSet struct {
	Name              string            `json:"name,omitempty"`
	OSImage           ImageDigestFormat `json:"osImage,omitempty"`
	OSExtensionsImage ImageDigestFormat `json:"osExtensionsImage,omitempty"`
}
