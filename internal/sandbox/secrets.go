package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Secrets are paths that no rule of a policy reaches, whatever it grants
// (Policy.Secrets): keys, tokens, credentials, histories. Landlock only
// adds, so a rule on a directory that holds a secret cannot take the
// secret out: the rule becomes rules on every other entry of the
// directory, and of those that hold a secret in turn, and a List rule on
// the directory, so that the names stay visible (a secret's name is no
// secret) and nothing of the secret is read, written or executed. A rule
// on a secret, or beneath one, goes. A rule that only lists (List) stays
// as it is.
//
// What a directory holds is read when the rules are made: an entry made
// later in a directory whose rule was split is not covered.

// withoutSecrets returns rules with nothing of secrets reachable.
func withoutSecrets(rules []Rule, secrets []string) []Rule {
	s := newSecretSet(secrets)
	if s.empty() {
		return rules
	}
	var out []Rule
	for _, r := range rules {
		if r.Access&^List == 0 {
			out = append(out, r)
			continue
		}
		switch {
		case s.covers(r.Path):
		case r.File == nil && s.beneath(r.Path):
			out = append(out, s.rulesBeneath(r.Path, r.Access)...)
		default:
			out = append(out, r)
		}
	}
	return out
}

// secretSet is a policy's secrets, each as named and, when it is reached
// through a symbolic link, as it really is.
type secretSet []string

func newSecretSet(secrets []string) secretSet {
	var s secretSet
	for _, p := range secrets {
		if !filepath.IsAbs(p) {
			continue
		}
		p = filepath.Clean(p)
		s = append(s, p)
		if real, err := filepath.EvalSymlinks(p); err == nil && real != p {
			s = append(s, real)
		}
	}
	return s
}

func (s secretSet) empty() bool { return len(s) == 0 }

// forms are path as named and as it really is.
func forms(path string) []string {
	path = filepath.Clean(path)
	if real, err := filepath.EvalSymlinks(path); err == nil && real != path {
		return []string{path, real}
	}
	return []string{path}
}

// covers reports whether path is a secret or beneath one.
func (s secretSet) covers(path string) bool {
	for _, p := range forms(path) {
		if slices.ContainsFunc(s, func(secret string) bool { return within(p, secret) }) {
			return true
		}
	}
	return false
}

// beneath reports whether a secret is beneath path.
func (s secretSet) beneath(path string) bool {
	for _, p := range forms(path) {
		if slices.ContainsFunc(s, func(secret string) bool { return secret != p && within(secret, p) }) {
			return true
		}
	}
	return false
}

// rulesBeneath are the rules giving access to dir but its secrets.
func (s secretSet) rulesBeneath(dir string, access Access) []Rule {
	real := forms(dir)
	dir = real[len(real)-1]
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var rules []Rule
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		switch {
		case s.covers(p):
		case s.beneath(p):
			rules = append(rules, s.rulesBeneath(p, access)...)
		default:
			rules = append(rules, Rule{Path: p, Access: access})
		}
	}
	if access&(Read|List) != 0 {
		rules = append(rules, Rule{Path: dir, Access: List})
	}
	return rules
}

// within reports whether path is dir or beneath it; both are clean and
// absolute.
func within(path, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(path, "/")
	}
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// Secret reports whether path is one of p's secrets or beneath one, as
// named or as it really is (symbolic links resolved).
func (p *Policy) Secret(path string) bool {
	return filepath.IsAbs(path) && newSecretSet(p.Secrets).covers(path)
}

// Allows reports whether p lets a process reach path with access, as far
// as its rules say: a rule on path or on a directory above it gives the
// access, and nothing reaches a secret. Symbolic links are resolved as
// the kernel would. It reads no file but to resolve links, and does not
// know what the kernel's ABI leaves unrestricted.
func (p *Policy) Allows(path string, access Access) bool {
	if !filepath.IsAbs(path) {
		return false
	}
	if p.Secret(path) {
		return false
	}
	target := forms(path)
	real := target[len(target)-1]
	var got Access
	for _, r := range p.Rules {
		for _, rp := range forms(r.Path) {
			if within(real, rp) {
				got |= r.Access
				break
			}
		}
	}
	if got&Read != 0 {
		got |= List
	}
	return got&access == access
}
