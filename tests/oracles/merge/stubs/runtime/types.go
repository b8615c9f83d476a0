// Package runtime stands in for k8s.io/apimachinery/pkg/runtime: RawExtension and its JSON
// methods as apimachinery defines them (pkg/runtime/extension.go).
package runtime

import "bytes"

type RawExtension struct {
	Raw []byte `json:"-"`
}

func (re *RawExtension) UnmarshalJSON(in []byte) error {
	if re == nil {
		return nil
	}
	if !bytes.Equal(in, []byte("null")) {
		re.Raw = append(re.Raw[0:0], in...)
	}
	return nil
}

func (re RawExtension) MarshalJSON() ([]byte, error) {
	if re.Raw == nil {
		return []byte("null"), nil
	}
	return re.Raw, nil
}
