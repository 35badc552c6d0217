// Package errs holds what the packages of agenthost do with errors alike.
package errs

import "errors"

// Innermost is the error at the end of err's chain (errors.Unwrap, one
// error at a time): the wrappers name operations, paths and methods, the
// innermost says what went wrong.
func Innermost(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}
