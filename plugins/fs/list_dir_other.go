//go:build !linux

package main

import "os"

// readTypes reads the entries of dir in name order. Elsewhere than on
// Linux it stats each entry, as readEntries does; list_dir then leaves
// the sizes out.
func readTypes(dir *os.File, keep func(name string) bool) ([]entry, error) {
	return readEntries(dir, keep)
}
