// Package v1 stands in for k8s.io/apimachinery/pkg/apis/meta/v1: the ObjectMeta fields
// the merge reads (name, labels, annotations), with apimachinery's json tags.
package v1

type ObjectMeta struct {
	Name        string            `json:"name,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

func (m *ObjectMeta) GetName() string { return m.Name }
