// Package klog stands in for k8s.io/klog/v2: the extracted code only logs, and the oracle
// discards its logs.
package klog

type Verbose bool

func V(level int) Verbose                             { return false }
func (v Verbose) Info(args ...interface{})            {}
func (v Verbose) Infof(f string, args ...interface{}) {}
func Infof(f string, args ...interface{})             {}
func Warningf(f string, args ...interface{})          {}
