package host

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/internal/textsafe"
)

// ErrInsecure matches an *InsecureError.
var ErrInsecure = errors.New("writable by others")

// InsecureError is a plugin binary, the plugins directory, a directory
// above either, or the lock file, that someone other than the user
// running the host and root could change: a binary planted or replaced
// there would run as that user. It is refused, as ssh refuses such a key
// file, unless Options.AllowInsecurePlugins says otherwise.
//
// The rule, checked on Unix (with ssh's StrictModes in mind):
//   - every file and directory checked is owned by root or the host's
//     user;
//   - none is writable by others, nor by a group, unless the group is its
//     owner's private group (the owner's primary group, with no other
//     member);
//   - a directory above the plugins directory (or above a binary that a
//     symlink points to) may be writable by others when it is sticky, as
//     /tmp is: then no one else can rename or remove what is in it. The
//     plugins directory itself may not, sticky or not: anyone could add a
//     binary to it.
type InsecureError struct {
	// What is refused: "plugins directory", "plugin binary", "lock file"
	// or "directory".
	What string
	// Path is the file or directory that is writable by others.
	Path string
	// Problem says how, such as "is writable by others (mode 0777)".
	Problem string
	// Fix is the command that fixes it, such as "chmod o-w /x".
	Fix string
}

func (e *InsecureError) Error() string {
	return fmt.Sprintf("%s %s %s; run %s, or pass --allow-insecure-plugins", e.What, textsafe.Name(e.Path), e.Problem, e.Fix)
}

// Is makes an *InsecureError match ErrInsecure.
func (e *InsecureError) Is(target error) bool { return target == ErrInsecure }

// shellWord quotes path for a shell command line when it needs it.
func shellWord(path string) string {
	if textsafe.NeedsQuoting(path) {
		return textsafe.Name(path)
	}
	if path != "" && strings.Trim(path, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./+:@%,=") == "" {
		return path
	}
	return "'" + strings.ReplaceAll(path, "'", `'\''`) + "'"
}
