//go:build !linux

package main

// closeInheritedOnExec does nothing here: os/exec passes a child only the
// descriptors it is given, and those the parent inherited stay open.
func closeInheritedOnExec() {}
