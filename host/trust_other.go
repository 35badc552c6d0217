//go:build !unix

package host

import "io/fs"

// trustChecker checks nothing where Unix permissions do not apply.
type trustChecker struct{}

func newTrustChecker() *trustChecker              { return &trustChecker{} }
func (*trustChecker) pluginsDir(string) error     { return nil }
func (*trustChecker) binary(string) error         { return nil }
func (*trustChecker) lockFile(string) error       { return nil }
func checkOpenedBinary(string, fs.FileInfo) error { return nil }
