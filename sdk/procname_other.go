//go:build !linux

package sdk

func nameProcess() {}
