//go:build unix

package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/sdk"
	"github.com/agenthost/agenthost/sdk/sdktest"
)

// helperTools are a reading and a writing tool built on sdk.Workspace, as
// an author writes them.
var helperTools = sdk.Plugin{
	Tools: []sdk.Tool{
		sdk.NewTool(sdk.Info{Name: "cat", Description: "Read a file."}, func(ctx context.Context, in struct {
			Path string `json:"path"`
		}) (string, error) {
			ws, err := sdk.OpenWorkspace(ctx)
			if err != nil {
				return "", err
			}
			defer ws.Close()
			data, err := ws.ReadFile(in.Path)
			return string(data), err
		}),
		sdk.NewTool(sdk.Info{Name: "put", Description: "Write a file."}, func(ctx context.Context, in struct {
			Path    string `json:"path"`
			Content string `json:"content"`
		}) (string, error) {
			ws, err := sdk.OpenWorkspace(ctx)
			if err != nil {
				return "", err
			}
			defer ws.Close()
			return "written", ws.WriteFile(ctx, in.Path, []byte(in.Content))
		}),
	},
	Permissions: sdk.Permissions{Roots: sdk.RootsReadWrite},
}

// fixture is two workspace roots and what lies outside them:
//
//	ws/in.txt                 "inside"
//	ws/d/                     a directory
//	ws/inlink -> in.txt       a link inside the root
//	ws/cross -> ../other/o.txt  a link into the other root
//	ws/out -> OUTSIDE         links out of the roots
//	ws/rel_out -> ../outside
//	ws/outfile -> OUTSIDE/secret.txt
//	ws/dangling -> OUTSIDE/created.txt (does not exist)
//	other/o.txt               "other"
//	outside/secret.txt        the sentinel
//	ws_evil/secret.txt        the sentinel, for the prefix trick
type fixture struct{ base, ws, other, outside string }

const sentinel = "SENTINEL: outside the workspace"

func newFixture(t *testing.T) fixture {
	t.Helper()
	base := t.TempDir()
	f := fixture{base: base, ws: filepath.Join(base, "ws"), other: filepath.Join(base, "other"), outside: filepath.Join(base, "outside")}
	write := func(path, content string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(f.ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(f.ws, "in.txt"), "inside")
	write(filepath.Join(f.ws, "d", "keep"), "")
	write(filepath.Join(f.other, "o.txt"), "other")
	write(filepath.Join(f.outside, "secret.txt"), sentinel)
	write(filepath.Join(base, "ws_evil", "secret.txt"), sentinel)
	link("in.txt", "inlink")
	link("../other/o.txt", "cross")
	link(f.outside, "out")
	link("../outside", "rel_out")
	link(filepath.Join(f.outside, "secret.txt"), "outfile")
	link(filepath.Join(f.outside, "created.txt"), "dangling")
	return f
}

func (f fixture) roots() []string { return []string{f.ws, f.other} }

// The sdk's Workspace and the built-in file tools share their
// confinement: on the same paths they read the same files and refuse the
// same ones, in the same words.
func TestWorkspaceAnswersAsTheBuiltIns(t *testing.T) {
	t.Parallel()
	fsPlugin := sdktest.Build(t, "github.com/agenthost/agenthost/plugins/fs")

	t.Run("read", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		builtIn := sdktest.Binary(t, fsPlugin, sdktest.Options{Roots: f.roots()})
		helper := sdktest.New(t, helperTools, sdktest.Options{Roots: f.roots()})
		for _, c := range []struct{ path, want string }{
			{"in.txt", "inside"},
			{"inlink", "inside"},
			{"cross", "other"},
			{filepath.Join(f.other, "o.txt"), "other"},
			{"nope.txt", "Error: file not found: nope.txt"},
			{"d/nope/x.txt", "Error: file not found: d/nope/x.txt"},
			{"d", "Error: d is a directory, not a file"},
			{"", "Error: path is empty"},
			{"../outside/secret.txt", `Error: path "../outside/secret.txt" is outside the workspace roots`},
			{"../../../../../../../../etc/passwd", `Error: path "../../../../../../../../etc/passwd" is outside the workspace roots`},
			{"/etc/passwd", `Error: path "/etc/passwd" is outside the workspace roots`},
			{filepath.Join(f.base, "ws_evil", "secret.txt"), `Error: path "` + filepath.Join(f.base, "ws_evil", "secret.txt") + `" is outside the workspace roots`},
			{"out/secret.txt", `Error: path "out/secret.txt" is outside the workspace roots`},
			{"rel_out/secret.txt", `Error: path "rel_out/secret.txt" is outside the workspace roots`},
			{"outfile", `Error: path "outfile" is outside the workspace roots`},
			{"dangling", `Error: path "dangling" is outside the workspace roots`},
			{"bad\nname", `Error: file not found: "bad\nname"`},
		} {
			args := `{"path":` + quote(c.path) + `}`
			got := map[string]string{
				"read_file": withoutTool(builtIn.Call("read_file", args), "read_file"),
				"cat":       withoutTool(helper.Call("cat", args), "cat"),
			}
			for tool, answer := range got {
				if answer != c.want {
					t.Errorf("%s %q = %q, want %q", tool, c.path, answer, c.want)
				}
			}
		}
	})

	t.Run("write", func(t *testing.T) {
		t.Parallel()
		for _, tool := range []string{"write_file", "put"} {
			f := newFixture(t)
			var h *sdktest.Host
			if tool == "write_file" {
				h = sdktest.Binary(t, fsPlugin, sdktest.Options{Roots: f.roots()})
			} else {
				h = sdktest.New(t, helperTools, sdktest.Options{Roots: f.roots()})
			}
			for _, c := range []struct{ path, want string }{
				{"../outside/new.txt", `Error: path "../outside/new.txt" is outside the workspace roots`},
				{"/etc/agenthost-nowhere", `Error: path "/etc/agenthost-nowhere" is outside the workspace roots`},
				{"out/new.txt", `Error: path "out/new.txt" is outside the workspace roots`},
				{"dangling", `Error: path "dangling" is outside the workspace roots`},
				{"outfile", `Error: path "outfile" is outside the workspace roots`},
				{"d", "Error: d: is a directory"},
			} {
				got := withoutTool(h.Call(tool, `{"path":`+quote(c.path)+`,"content":"new"}`), tool)
				if got != c.want {
					t.Errorf("%s %q = %q, want %q", tool, c.path, got, c.want)
				}
			}
			// A link is written through, in its root or into another.
			for _, path := range []string{"inlink", "cross", "n/e/w.txt"} {
				if got := h.Call(tool, `{"path":`+quote(path)+`,"content":"new"}`); strings.HasPrefix(got, "Error") {
					t.Errorf("%s %q = %q", tool, path, got)
				}
			}
			for path, want := range map[string]string{
				filepath.Join(f.ws, "in.txt"):                  "new",
				filepath.Join(f.other, "o.txt"):                "new",
				filepath.Join(f.ws, "n", "e", "w.txt"):         "new",
				filepath.Join(f.outside, "secret.txt"):         sentinel,
				filepath.Join(f.base, "ws_evil", "secret.txt"): sentinel,
			} {
				if data, err := os.ReadFile(path); err != nil || string(data) != want {
					t.Errorf("after %s, %s holds %q (%v), want %q", tool, path, data, err, want)
				}
			}
			for _, name := range []string{"inlink", "cross", "dangling"} {
				if info, err := os.Lstat(filepath.Join(f.ws, name)); err != nil || info.Mode()&fs.ModeSymlink == 0 {
					t.Errorf("after %s, %s is no longer a link: %v", tool, name, err)
				}
			}
			if _, err := os.Lstat(filepath.Join(f.outside, "created.txt")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s created a file through the dangling link: %v", tool, err)
			}
		}
	})
}

// withoutTool strips the name of the tool from a failure, so that two
// tools' failures compare: "Error executing read_file: MESSAGE" becomes
// "Error: MESSAGE".
func withoutTool(answer, tool string) string {
	if msg, ok := strings.CutPrefix(answer, "Error executing "+tool+": "); ok {
		return "Error: " + msg
	}
	return answer
}

// quote is s as a JSON string.
func quote(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Resolve places a path in the root it leads into, following links, and
// FileError words what an operation through that root met.
func TestWorkspaceResolve(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := sdk.WithRoots(t.Context(), f.roots())
	ws, err := sdk.OpenWorkspace(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()

	for path, want := range map[string]string{
		"in.txt":    filepath.Join(f.ws, "in.txt"),
		"inlink":    filepath.Join(f.ws, "in.txt"),
		"cross":     filepath.Join(f.other, "o.txt"),
		".":         f.ws,
		"new/dir/f": filepath.Join(f.ws, "new", "dir", "f"),
	} {
		root, rel, err := ws.Resolve(path)
		if err != nil {
			t.Errorf("Resolve(%q): %v", path, err)
			continue
		}
		if got := filepath.Join(root.Name(), rel); got != want {
			t.Errorf("Resolve(%q) = %s, want %s", path, got, want)
		}
	}
	for _, path := range []string{"out/x", "../x", "/etc/passwd", "dangling"} {
		if _, _, err := ws.Resolve(path); !errors.Is(err, sdk.ErrOutsideWorkspace) {
			t.Errorf("Resolve(%q): %v, want the outside error", path, err)
		}
	}

	root, rel, err := ws.Resolve("d/missing")
	if err != nil {
		t.Fatal(err)
	}
	_, err = fs.ReadDir(root.FS(), rel)
	if got, want := sdk.FileError("d/missing", err).Error(), "d/missing: no such file or directory"; got != want {
		t.Errorf("FileError = %q, want %q", got, want)
	}
	_, err = root.Open("../outside/secret.txt")
	if got := sdk.FileError("x", err); !errors.Is(got, sdk.ErrOutsideWorkspace) || got.Error() != `path "x" is outside the workspace roots` {
		t.Errorf("FileError of an escape = %v", got)
	}
	if sdk.FileError("x", nil) != nil {
		t.Error("FileError(nil) is not nil")
	}

	if _, err := sdk.OpenWorkspace(t.Context()); err == nil || err.Error() != "the host set no workspace roots" {
		t.Errorf("OpenWorkspace without roots: %v", err)
	}
}
