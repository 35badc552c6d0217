package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestWalkPortable checks that the portable walk (os.Root handles) and the
// default one see the same entries and read the same contents.
func TestWalkPortable(t *testing.T) {
	t.Parallel()
	outside := writeTree(t, map[string]string{"secret.txt": "outside\n"})
	files := map[string]string{
		"a.txt":             "a\n",
		"d/b.txt":           "b\n",
		"d/e/f/g.txt":       "g\n",
		".hidden/h.txt":     "h\n",
		".gitignore":        "*.log\n",
		"x.log":             "log\n",
		"link.txt":          "-> a.txt",
		"link-dir":          "-> d",
		"out.txt":           "-> " + filepath.Join(outside, "secret.txt"),
		"out-dir":           "-> " + outside,
		"d/e/up":            "-> ../..",
		"empty/":            "",
		"many/":             "",
		".git/objects/x":    "x\n",
		".git/info/exclude": "many/001.txt\n",
		"d/.gitignore":      "!*.log\n",
		"d/kept.log":        "kept\n",
		"d/e/f/.ignore":     "g.txt\n",
		"d/e/f/other.txt":   "other\n",
	}
	for i := range 3 * filesPerTask {
		files[fmt.Sprintf("many/%03d.txt", i)] = fmt.Sprint(i, "\n")
	}
	root := writeTree(t, files)
	ws, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()

	run := func(opts walkOptions) []string {
		var mu sync.Mutex
		var seen []string
		_, err := walk(t.Context(), []*walkStart{{ws: ws, rootPath: root}}, opts, func() *[]byte { return new([]byte) },
			func(buf *[]byte, e *entry) {
				desc := e.rel()
				switch {
				case e.typ.IsDir():
					desc += "/"
				default:
					var text string
					f, err := e.open()
					if err == nil {
						*buf, err = readWith(f, *buf, func(content []byte) { text = string(content) })
						f.close()
					}
					if err != nil {
						desc += " (unread)"
					} else {
						desc += " " + strings.TrimSpace(text)
					}
				}
				mu.Lock()
				seen = append(seen, desc)
				mu.Unlock()
			})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(seen)
		return seen
	}
	for _, hidden := range []bool{false, true} {
		fast := run(walkOptions{hidden: hidden})
		portable := run(walkOptions{hidden: hidden, portable: true})
		if !slices.Equal(fast, portable) {
			t.Errorf("hidden %v: the walks differ:\nfast:     %q\nportable: %q", hidden, fast, portable)
		}
		for _, e := range fast {
			if strings.Contains(e, "outside") || strings.Contains(e, ".git/") || strings.HasPrefix(e, "x.log") || strings.HasPrefix(e, "d/e/f/g.txt") {
				t.Errorf("hidden %v: the walk visited %q", hidden, e)
			}
		}
		for _, want := range []string{"a.txt a", "link.txt a", "link-dir (unread)", "out.txt (unread)", "out-dir (unread)", "d/e/up (unread)", "d/kept.log kept", "d/e/f/other.txt other", "many/191.txt 191", "empty/"} {
			if !slices.Contains(fast, want) {
				t.Errorf("hidden %v: the walk did not visit %q", hidden, want)
			}
		}
		if hasHidden := slices.Contains(fast, ".hidden/h.txt h"); hasHidden != hidden {
			t.Errorf("hidden %v: visited .hidden/h.txt: %v", hidden, hasHidden)
		}
	}
	one := run(walkOptions{maxDepth: 1})
	for _, e := range one {
		if strings.Contains(e, "/") && !strings.HasSuffix(e, "/") {
			t.Errorf("maxDepth 1 visited %q", e)
		}
	}
}

// TestWalkKnowsWholeReads: every directory of a walk knows whether its
// file system fills reads, as the mount table says of the start.
func TestWalkKnowsWholeReads(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{"a.txt": "a", "d/e/b.txt": "b"})
	ws, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	want := wholeReadFileSystems[fileSystemOf(currentMounts(), real)]
	var mu sync.Mutex
	seen := 0
	_, err = walk(t.Context(), []*walkStart{{ws: ws, rootPath: root}}, walkOptions{}, func() int { return 0 }, func(_ int, e *entry) {
		mu.Lock()
		defer mu.Unlock()
		seen++
		if e.dir.wholeReads != want {
			t.Errorf("%s: wholeReads %v, want %v", e.rel(), e.dir.wholeReads, want)
		}
	})
	if err != nil || seen != 4 {
		t.Fatalf("walk: %v, %d entries", err, seen)
	}
}
