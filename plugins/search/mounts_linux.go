package main

import "os"

// currentMounts returns this process's mounts: mount point → file system
// type; nil when they cannot be read.
func currentMounts() map[string]string {
	root, err := os.OpenRoot("/proc/self")
	if err != nil {
		return nil
	}
	defer root.Close()
	data, err := readInRoot(root, "mountinfo")
	if err != nil {
		return nil
	}
	return parseMountInfo(data)
}
