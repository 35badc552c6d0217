package toolcall

// NamePattern is the pattern a tool name matches, as messages give it.
const NamePattern = `^[a-zA-Z0-9_-]{1,64}$`

// ValidName reports whether name is a valid tool name: one to 64 ASCII
// letters, digits, underscores or hyphens (it matches NamePattern; a
// compiled regexp would cost every plugin and host its compilation at
// start-up).
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// ValidGlob reports whether s is a glob over tool names: what a tool's
// name may hold, and * and ?; not empty.
func ValidGlob(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-', c == '*', c == '?':
		default:
			return false
		}
	}
	return s != ""
}
