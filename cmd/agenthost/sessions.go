package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agenthost/agenthost/host/agent"
	"github.com/agenthost/agenthost/host/llm"
	"github.com/agenthost/agenthost/internal/textsafe"
)

// Chat keeps each conversation as a file of its own (agent.State as
// JSON, readable by the user alone) in the sessions directory, saved
// after every answer, so that chat --resume and chat --session NAME go on
// with it, in another process, as if it had never stopped.

// sessionsDir is where chat keeps its conversations: agenthost/sessions
// under the user's data directory ($XDG_DATA_HOME, else ~/.local/share).
func sessionsDir() (string, error) {
	base := os.Getenv("XDG_DATA_HOME")
	if base == "" || !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("finding the directory for saved conversations: %w (set XDG_DATA_HOME)", err)
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "agenthost", "sessions"), nil
}

// sessionStore is the sessions directory.
type sessionStore struct{ dir string }

// maxSessionName bounds a session's name.
const maxSessionName = 64

// checkSessionName accepts a name that is a file name of letters, digits,
// '.', '_' and '-', not starting with '.'.
func checkSessionName(name string) error {
	if name == "" || len(name) > maxSessionName || name[0] == '.' {
		return fmt.Errorf("session name %s: want 1 to %d letters, digits, '.', '_' or '-', not starting with '.'", textsafe.Name(name), maxSessionName)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("session name %s: want 1 to %d letters, digits, '.', '_' or '-', not starting with '.'", textsafe.Name(name), maxSessionName)
		}
	}
	return nil
}

func (s sessionStore) path(name string) string { return filepath.Join(s.dir, name+".json") }

// load reads the session name; ok is false when there is none.
func (s sessionStore) load(name string) (st agent.State, ok bool, err error) {
	st, err = agent.ReadStateFile(s.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return st, false, nil
	}
	return st, err == nil, err
}

// save writes the session name, making the directory (0700) first.
func (s sessionStore) save(name string, st agent.State) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	return agent.WriteStateFile(s.path(name), st)
}

// sessionInfo is one saved conversation, as /sessions lists it.
type sessionInfo struct {
	name     string
	modified time.Time
}

// list returns the saved conversations, the latest first.
func (s sessionStore) list() ([]sessionInfo, error) {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []sessionInfo
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !e.Type().IsRegular() || checkSessionName(name) != nil {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, sessionInfo{name: name, modified: info.ModTime()})
	}
	slices.SortFunc(out, func(a, b sessionInfo) int { return b.modified.Compare(a.modified) })
	return out, nil
}

// newName is a name for a new conversation: the time it starts, made
// unique in the directory.
func (s sessionStore) newName(now time.Time) string {
	base := now.Format("2006-01-02-150405")
	name := base
	for i := 2; ; i++ {
		if _, err := os.Lstat(s.path(name)); errors.Is(err, fs.ErrNotExist) {
			return name
		}
		name = fmt.Sprintf("%s-%d", base, i)
	}
}

// firstQuestion is the first line of a conversation's first question,
// short, for /sessions.
func firstQuestion(msgs []llm.Message) string {
	for _, m := range msgs {
		if m.Role == llm.RoleUser {
			line, _, _ := strings.Cut(m.Content, "\n")
			return short(line, 60)
		}
	}
	return ""
}
