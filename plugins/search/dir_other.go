//go:build !linux

package main

import "os"

// openFastDir is openRootDir where there is no descriptor-based walk.
func openFastDir(ws *os.Root, rel string) (dirHandle, error) {
	return openRootDir(ws, rel)
}

// fdPath cannot tell where a descriptor is open here.
func fdPath(fd int) (string, bool) { return "", false }

// beneath finds names inside a workspace root through its os.Root.
type beneath struct{ ws *os.Root }

func openBeneath(ws *os.Root) beneath { return beneath{ws} }

// exists reports whether rel names an entry inside the root.
func (b *beneath) exists(rel string) bool {
	_, err := b.ws.Lstat(rel)
	return err == nil
}

func (b *beneath) close() {}
