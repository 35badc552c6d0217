package main

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/sdk"
)

const sentinel = "SENTINEL: outside the workspace"

// confined is a workspace root with everything outside it that the
// confinement tests try to reach.
type confined struct {
	root    string // the workspace root, <base>/ws
	outside string // <base>/outside, holding secret.txt
	evil    string // <base>/ws_evil, the prefix trick, holding secret.txt
}

// newConfined makes a root whose links lead outside it:
//
//	ws/in.txt              a file inside
//	ws/d/f.txt             a directory inside, for the swaps
//	ws/out -> OUTSIDE      absolute link to the outside directory
//	ws/rel_out -> ../outside
//	ws/outfile -> OUTSIDE/secret.txt
//	ws/rel_outfile -> ../outside/secret.txt
//	ws/dangling -> OUTSIDE/created.txt      (does not exist)
//	ws/rel_dangling -> ../outside/created.txt
//	ws/chain -> out        a link to a link
func newConfined(t *testing.T) confined {
	t.Helper()
	base := t.TempDir()
	c := confined{root: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside"), evil: filepath.Join(base, "ws_evil")}
	mustWrite(t, filepath.Join(c.outside, "secret.txt"), sentinel)
	mustWrite(t, filepath.Join(c.evil, "secret.txt"), sentinel)
	mustWrite(t, filepath.Join(c.root, "in.txt"), "inside")
	mustWrite(t, filepath.Join(c.root, "d", "f.txt"), "inside d")
	mustSymlink(t, c.outside, filepath.Join(c.root, "out"))
	mustSymlink(t, "../outside", filepath.Join(c.root, "rel_out"))
	mustSymlink(t, filepath.Join(c.outside, "secret.txt"), filepath.Join(c.root, "outfile"))
	mustSymlink(t, "../outside/secret.txt", filepath.Join(c.root, "rel_outfile"))
	mustSymlink(t, filepath.Join(c.outside, "created.txt"), filepath.Join(c.root, "dangling"))
	mustSymlink(t, "../outside/created.txt", filepath.Join(c.root, "rel_dangling"))
	mustSymlink(t, "out", filepath.Join(c.root, "chain"))
	return c
}

// swap replaces the directory ws/d by a link to the outside directory.
func (c confined) swap(t *testing.T) {
	t.Helper()
	if err := os.Rename(filepath.Join(c.root, "d"), filepath.Join(c.root, "d.old")); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, c.outside, filepath.Join(c.root, "d"))
}

// snapshot records every file outside the root: its kind and content.
func (c confined) snapshot(t *testing.T) map[string]string {
	t.Helper()
	snap := map[string]string{}
	for _, dir := range []string{c.outside, c.evil} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			switch {
			case d.IsDir():
				snap[path] = "dir"
			case d.Type()&fs.ModeSymlink != 0:
				target, _ := os.Readlink(path)
				snap[path] = "link " + target
			default:
				data, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				snap[path] = "file " + string(data)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return snap
}

// TestConfinement is the table of every way out of a workspace root that
// the tools must refuse: each call fails with exactly the outside error,
// answers nothing from outside, and leaves everything outside as it was.
func TestConfinement(t *testing.T) {
	t.Parallel()
	type tc struct {
		tool sdk.Tool
		// args may use OUTSIDE and EVIL, replaced by those directories.
		args map[string]any
		// refused is the path the error names.
		refused string
		// swap swaps ws/d for a link outside after a first call that
		// saw it a directory.
		swap bool
	}
	tests := map[string]tc{
		// read_file
		"read_file: ..":                             {readFile, map[string]any{"path": "../outside/secret.txt"}, "../outside/secret.txt", false},
		"read_file: .. after a directory":           {readFile, map[string]any{"path": "d/../../outside/secret.txt"}, "d/../../outside/secret.txt", false},
		"read_file: an absolute path elsewhere":     {readFile, map[string]any{"path": "OUTSIDE/secret.txt"}, "OUTSIDE/secret.txt", false},
		"read_file: the prefix trick":               {readFile, map[string]any{"path": "EVIL/secret.txt"}, "EVIL/secret.txt", false},
		"read_file: a link to a file outside":       {readFile, map[string]any{"path": "outfile"}, "outfile", false},
		"read_file: a relative link outside":        {readFile, map[string]any{"path": "rel_outfile"}, "rel_outfile", false},
		"read_file: through a linked directory":     {readFile, map[string]any{"path": "out/secret.txt"}, "out/secret.txt", false},
		"read_file: through a relative link":        {readFile, map[string]any{"path": "rel_out/secret.txt"}, "rel_out/secret.txt", false},
		"read_file: through a chain of links":       {readFile, map[string]any{"path": "chain/secret.txt"}, "chain/secret.txt", false},
		"read_file: as base64 through a link":       {readFile, map[string]any{"path": "outfile", "encoding": "base64"}, "outfile", false},
		"read_file: a directory swapped for a link": {readFile, map[string]any{"path": "d/secret.txt"}, "d/secret.txt", true},
		// write_file
		"write_file: ..":                             {writeFile, map[string]any{"path": "../outside/new.txt", "content": "x"}, "../outside/new.txt", false},
		"write_file: an absolute path elsewhere":     {writeFile, map[string]any{"path": "OUTSIDE/new.txt", "content": "x"}, "OUTSIDE/new.txt", false},
		"write_file: the prefix trick":               {writeFile, map[string]any{"path": "EVIL/new.txt", "content": "x"}, "EVIL/new.txt", false},
		"write_file: a link to a file outside":       {writeFile, map[string]any{"path": "outfile", "content": "x"}, "outfile", false},
		"write_file: a relative link outside":        {writeFile, map[string]any{"path": "rel_outfile", "content": "x"}, "rel_outfile", false},
		"write_file: through a linked directory":     {writeFile, map[string]any{"path": "out/new.txt", "content": "x"}, "out/new.txt", false},
		"write_file: new directories through a link": {writeFile, map[string]any{"path": "out/a/b/new.txt", "content": "x"}, "out/a/b/new.txt", false},
		"write_file: a dangling link outside":        {writeFile, map[string]any{"path": "dangling", "content": "x"}, "dangling", false},
		"write_file: a relative dangling link":       {writeFile, map[string]any{"path": "rel_dangling", "content": "x"}, "rel_dangling", false},
		"write_file: a directory swapped for a link": {writeFile, map[string]any{"path": "d/f.txt", "content": "x"}, "d/f.txt", true},
		// list_dir
		"list_dir: ..":                             {listDir, map[string]any{"path": ".."}, "..", false},
		"list_dir: an absolute path elsewhere":     {listDir, map[string]any{"path": "OUTSIDE"}, "OUTSIDE", false},
		"list_dir: the prefix trick":               {listDir, map[string]any{"path": "EVIL"}, "EVIL", false},
		"list_dir: a linked directory":             {listDir, map[string]any{"path": "out"}, "out", false},
		"list_dir: a relative link":                {listDir, map[string]any{"path": "rel_out", "depth": 3}, "rel_out", false},
		"list_dir: a directory swapped for a link": {listDir, map[string]any{"path": "d"}, "d", true},
		// mkdir
		"mkdir: ..":                         {mkdir, map[string]any{"path": "../outside/new"}, "../outside/new", false},
		"mkdir: the prefix trick":           {mkdir, map[string]any{"path": "EVIL/new"}, "EVIL/new", false},
		"mkdir: through a linked directory": {mkdir, map[string]any{"path": "out/new/deeper"}, "out/new/deeper", false},
		"mkdir: a dangling link":            {mkdir, map[string]any{"path": "dangling"}, "dangling", false},
		// remove
		"remove: ..":                             {remove, map[string]any{"path": "../outside/secret.txt"}, "../outside/secret.txt", false},
		"remove: an absolute path elsewhere":     {remove, map[string]any{"path": "OUTSIDE"}, "OUTSIDE", false},
		"remove: the prefix trick":               {remove, map[string]any{"path": "EVIL/secret.txt"}, "EVIL/secret.txt", false},
		"remove: through a linked directory":     {remove, map[string]any{"path": "out/secret.txt"}, "out/secret.txt", false},
		"remove: through a relative link":        {remove, map[string]any{"path": "rel_out/secret.txt"}, "rel_out/secret.txt", false},
		"remove: a directory swapped for a link": {remove, map[string]any{"path": "d/secret.txt"}, "d/secret.txt", true},
		// move
		"move: a source through ..":                   {move, map[string]any{"source": "../outside/secret.txt", "destination": "stolen.txt"}, "../outside/secret.txt", false},
		"move: a source elsewhere":                    {move, map[string]any{"source": "OUTSIDE/secret.txt", "destination": "stolen.txt"}, "OUTSIDE/secret.txt", false},
		"move: a source by the prefix trick":          {move, map[string]any{"source": "EVIL/secret.txt", "destination": "stolen.txt"}, "EVIL/secret.txt", false},
		"move: a source through a linked directory":   {move, map[string]any{"source": "out/secret.txt", "destination": "stolen.txt"}, "out/secret.txt", false},
		"move: a destination through ..":              {move, map[string]any{"source": "in.txt", "destination": "../outside/planted.txt"}, "../outside/planted.txt", false},
		"move: a destination by the prefix trick":     {move, map[string]any{"source": "in.txt", "destination": "EVIL/planted.txt"}, "EVIL/planted.txt", false},
		"move: a destination through a linked dir":    {move, map[string]any{"source": "in.txt", "destination": "out/planted.txt"}, "out/planted.txt", false},
		"move: a destination through a relative link": {move, map[string]any{"source": "in.txt", "destination": "rel_out/secret.txt", "overwrite": true}, "rel_out/secret.txt", false},
		"move: a source directory swapped for a link": {move, map[string]any{"source": "d/secret.txt", "destination": "stolen.txt"}, "d/secret.txt", true},
		"move: a destination swapped for a link":      {move, map[string]any{"source": "in.txt", "destination": "d/planted.txt"}, "d/planted.txt", true},
		// edit_file
		"edit_file: ..":                             {editFile, map[string]any{"path": "../outside/secret.txt", "old_string": "SENTINEL", "new_string": "x"}, "../outside/secret.txt", false},
		"edit_file: an absolute path elsewhere":     {editFile, map[string]any{"path": "OUTSIDE/secret.txt", "old_string": "SENTINEL", "new_string": "x"}, "OUTSIDE/secret.txt", false},
		"edit_file: the prefix trick":               {editFile, map[string]any{"path": "EVIL/secret.txt", "old_string": "SENTINEL", "new_string": "x"}, "EVIL/secret.txt", false},
		"edit_file: a link to a file outside":       {editFile, map[string]any{"path": "outfile", "old_string": "SENTINEL", "new_string": "x"}, "outfile", false},
		"edit_file: a relative link outside":        {editFile, map[string]any{"path": "rel_outfile", "old_string": "SENTINEL", "new_string": "x"}, "rel_outfile", false},
		"edit_file: through a linked directory":     {editFile, map[string]any{"path": "out/secret.txt", "old_string": "SENTINEL", "new_string": "x"}, "out/secret.txt", false},
		"edit_file: a directory swapped for a link": {editFile, map[string]any{"path": "d/secret.txt", "old_string": "SENTINEL", "new_string": "x"}, "d/secret.txt", true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newConfined(t)
			expand := strings.NewReplacer("OUTSIDE", c.outside, "EVIL", c.evil).Replace
			args := map[string]any{}
			for k, v := range tc.args {
				if s, ok := v.(string); ok {
					v = expand(s)
				}
				args[k] = v
			}
			if tc.swap {
				// The check: d is a directory inside the root.
				if got, err := call(t, c.root, listDir, map[string]any{"path": "d"}); err != nil || got != "f.txt (8 B)\n" {
					t.Fatalf("list_dir(d) before the swap = %q, %v", got, err)
				}
				c.swap(t)
			}
			before := c.snapshot(t)
			got, err := call(t, c.root, tc.tool, args)
			want := fmt.Sprintf("path %q is outside the workspace roots", expand(tc.refused))
			wantErr(t, fmt.Sprintf("%s(%v)", tc.tool.Name(), args), got, err, want)
			if strings.Contains(got, "SENTINEL") || (err != nil && strings.Contains(err.Error(), "SENTINEL")) {
				t.Errorf("the answer shows what is outside: %q, %v", got, err)
			}
			if after := c.snapshot(t); !maps.Equal(before, after) {
				t.Errorf("outside the root changed:\nbefore %v\nafter  %v", before, after)
			}
			// Inside, the file that move would have taken is still there.
			if got := readString(t, filepath.Join(c.root, "in.txt")); got != "inside" {
				t.Errorf("in.txt holds %q", got)
			}
		})
	}
}

// TestLinksOutsideThemselves covers the operations that act on a link
// pointing outside rather than through it: they touch the link only.
func TestLinksOutsideThemselves(t *testing.T) {
	t.Parallel()
	c := newConfined(t)
	before := c.snapshot(t)
	got, err := call(t, c.root, listDir, nil)
	if err != nil || !strings.Contains(got, "out -> "+c.outside+"\n") || !strings.Contains(got, "rel_outfile -> ../outside/secret.txt\n") {
		t.Errorf("list_dir = %q, %v; want the links with their targets", got, err)
	}
	got, err = call(t, c.root, listDir, map[string]any{"depth": 5})
	if err != nil || strings.Contains(got, "secret.txt (") {
		t.Errorf("list_dir depth 5 = %q, %v; want the links not entered", got, err)
	}
	if got, err := call(t, c.root, move, map[string]any{"source": "out", "destination": "moved/out"}); err != nil || got != "Moved out to moved/out" {
		t.Errorf("move of the link itself = %q, %v", got, err)
	}
	if target, err := os.Readlink(filepath.Join(c.root, "moved", "out")); err != nil || target != c.outside {
		t.Errorf("moved/out -> %q, %v", target, err)
	}
	if got, err := call(t, c.root, move, map[string]any{"source": "in.txt", "destination": "outfile", "overwrite": true}); err != nil || got != "Moved in.txt to outfile" {
		t.Errorf("move over the link = %q, %v", got, err)
	}
	if info, err := os.Lstat(filepath.Join(c.root, "outfile")); err != nil || !info.Mode().IsRegular() {
		t.Errorf("outfile: %v, %v; want the file that replaced the link", info, err)
	}
	for _, link := range []string{"moved/out", "rel_out", "dangling", "chain"} {
		if got, err := call(t, c.root, remove, map[string]any{"path": link}); err != nil || got != "Removed symbolic link "+link {
			t.Errorf("remove(%s) = %q, %v", link, got, err)
		}
	}
	if after := c.snapshot(t); !maps.Equal(before, after) {
		t.Errorf("outside the root changed:\nbefore %v\nafter  %v", before, after)
	}
}
