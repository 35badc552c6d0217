package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk"
)

// withState returns a context in which sdk.HostState answers st.
func withState(t *testing.T, st sdk.State) context.Context {
	t.Helper()
	return sdk.WithStateFunc(t.Context(), func(context.Context) (sdk.State, error) { return st, nil })
}

// save calls save_session_context in-process.
func save(ctx context.Context, reason string) (string, error) {
	args, err := json.Marshal(map[string]string{"reason": reason})
	if err != nil {
		return "", err
	}
	return saveSessionContext.Execute(ctx, args)
}

// TestSaveSessionContext replaces the package's clock, so it must not run
// in parallel with anything that saves.
func TestSaveSessionContext(t *testing.T) {
	saved := time.Date(2024, 5, 6, 9, 8, 9, 0, time.FixedZone("CEST", 2*60*60))
	old := now
	now = func() time.Time { return saved }
	t.Cleanup(func() { now = old })

	t.Run("writes the session file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state", "nested", "session.json")
		st := sdk.State{
			SystemPrompt:           "You are helpful.",
			SessionContext:         "notes: <b>bold</b> & \"quoted\"\nsecond line",
			SessionContextFilePath: path,
		}
		got, err := save(withState(t, st), "milestone reached")
		if err != nil {
			t.Fatalf("save_session_context: %v", err)
		}
		if want := "Session context saved to " + path; got != want {
			t.Errorf("save_session_context = %q, want %q", got, want)
		}

		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("the session file was not written: %v", err)
		}
		var file map[string]any
		if err := json.Unmarshal(data, &file); err != nil {
			t.Fatalf("the session file is not JSON: %v\n%s", err, data)
		}
		want := map[string]any{
			"saved_at":        "2024-05-06T07:08:09Z", // in UTC
			"reason":          "milestone reached",
			"system_prompt":   st.SystemPrompt,
			"session_context": st.SessionContext,
		}
		if len(file) != len(want) {
			t.Errorf("the session file has keys %v, want exactly saved_at, reason, system_prompt, session_context", keys(file))
		}
		for k, v := range want {
			if file[k] != v {
				t.Errorf("%s = %#v, want %#v", k, file[k], v)
			}
		}
		if !strings.HasSuffix(string(data), "}\n") {
			t.Errorf("the session file does not end with a newline: %q", data)
		}
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if perm := info.Mode().Perm(); perm != 0o600 {
			t.Errorf("a new session file has mode %v, want 0600", perm)
		}
	})

	t.Run("replaces an earlier save", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "session.json")
		if err := os.WriteFile(path, []byte(`{"reason":"old","extra":"a much longer earlier file"}`), 0o640); err != nil {
			t.Fatal(err)
		}
		st := sdk.State{SystemPrompt: "p", SessionContext: "", SessionContextFilePath: path}
		if _, err := save(withState(t, st), "again"); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var file map[string]any
		if err := json.Unmarshal(data, &file); err != nil {
			t.Fatalf("the session file is not JSON: %v\n%s", err, data)
		}
		if file["reason"] != "again" || file["session_context"] != "" || file["extra"] != nil {
			t.Errorf("the session file after a second save = %s", data)
		}
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if perm := info.Mode().Perm(); perm != 0o640 {
			t.Errorf("an existing session file changed mode to %v, want it kept at 0640", perm)
		}
	})

	t.Run("reads the state at the time of the call", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "session.json")
		notes := "first"
		ctx := sdk.WithStateFunc(t.Context(), func(context.Context) (sdk.State, error) {
			return sdk.State{SessionContext: notes, SessionContextFilePath: path}, nil
		})
		if _, err := save(ctx, "one"); err != nil {
			t.Fatal(err)
		}
		notes = "second"
		if _, err := save(ctx, "two"); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), `"session_context": "second"`) {
			t.Errorf("the second save did not see the changed state: %s", data)
		}
	})

	t.Run("the file cannot be written", func(t *testing.T) {
		blocker := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(blocker, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(blocker, "session.json")
		_, err := save(withState(t, sdk.State{SessionContextFilePath: path}), "r")
		if err == nil || !strings.HasPrefix(err.Error(), "saving the session context: ") {
			t.Errorf("saving under a regular file: error %v, want one starting %q", err, "saving the session context: ")
		}
	})
}

// The tests below fail before the clock is read, so they may run in
// parallel with each other.

func TestSaveSessionContextErrors(t *testing.T) {
	t.Parallel()
	errHost := errors.New("the host went away")
	tests := map[string]struct {
		ctx     func(t *testing.T) context.Context
		args    string
		wantErr error  // for errors.Is, or nil
		wantMsg string // the whole message, or ""
	}{
		"no path configured": {
			ctx: func(t *testing.T) context.Context {
				return withState(t, sdk.State{SystemPrompt: "p", SessionContext: "s"})
			},
			args:    `{"reason":"r"}`,
			wantMsg: "no session context file path is configured",
		},
		"no host state": {
			ctx:     func(t *testing.T) context.Context { return t.Context() },
			args:    `{"reason":"r"}`,
			wantErr: sdk.ErrNoHostState,
		},
		"host state fails": {
			ctx: func(t *testing.T) context.Context {
				return sdk.WithStateFunc(t.Context(), func(context.Context) (sdk.State, error) { return sdk.State{}, errHost })
			},
			args:    `{"reason":"r"}`,
			wantErr: errHost,
		},
		"no reason": {
			ctx:     func(t *testing.T) context.Context { return withState(t, sdk.State{SessionContextFilePath: "/nowhere"}) },
			args:    `{}`,
			wantMsg: `invalid arguments: required: missing properties: ["reason"]`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := saveSessionContext.Execute(tc.ctx(t), json.RawMessage(tc.args))
			if err == nil {
				t.Fatalf("save_session_context = %q, want an error", got)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
			if tc.wantMsg != "" && err.Error() != tc.wantMsg {
				t.Errorf("error %q, want %q", err, tc.wantMsg)
			}
		})
	}
}

func TestSaveSessionContextSchema(t *testing.T) {
	t.Parallel()
	s := saveSessionContext.Schema()
	if s.Function.Name != "save_session_context" || saveSessionContext.Name() != "save_session_context" {
		t.Errorf("name %q / schema %q, want save_session_context", saveSessionContext.Name(), s.Function.Name)
	}
	var params struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(s.Function.Parameters, &params); err != nil {
		t.Fatal(err)
	}
	if len(params.Required) != 1 || params.Required[0] != "reason" {
		t.Errorf("required = %v, want [reason]", params.Required)
	}
	if a := sdk.AnnotationsOf(saveSessionContext); a.OptIn || a.ReadOnly {
		t.Errorf("annotations %+v: save_session_context writes a file and is enabled by default", a)
	}
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
