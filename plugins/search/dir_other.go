//go:build !linux

package main

import "os"

// openFastDir is openRootDir where there is no descriptor-based walk.
func openFastDir(ws *os.Root, rel string) (dirHandle, error) {
	return openRootDir(ws, rel)
}
