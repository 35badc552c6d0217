package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agenthost/agenthost/sdk"
)

// fuzzTools are the tools FuzzToolArgs calls, by index.
var fuzzTools = []sdk.Tool{readFile, writeFile, listDir, mkdir, remove, move, editFile, fileInfo}

// fuzzSeeds are arguments from the defects the tools were fixed for.
var fuzzSeeds = []string{
	`{"path":"a.txt"}`,
	`{"path":"a.txt","offset":2,"limit":1,"line_numbers":true}`,
	`{"path":"a.txt","limit":1e30}`,
	`{"path":"a.txt","offset":9223372036854775807}`,
	`{"path":"a.txt","offset":9223372036854775808}`,
	`{"path":"a.txt","offset":-1}`,
	`{"path":"a.txt","encoding":"base64"}`,
	`{"depth":1e300}`,
	`{"depth":5,"include_hidden":true,"max_entries":-1}`,
	`{"path":"dir/new/","content":"x"}`,
	`{"path":"new/deep/f.txt","content":"x"}`,
	`{"path":"b.bin","content":"AP8=","encoding":"base64"}`,
	"{\"path\":\"bad\xff.txt\",\"content\":\"x\"}",
	`{"path":"bad\udc80.txt","content":"x"}`,
	`{"path":"ok.txt","content":"\ud83d\ude00"}`,
	`{"path":"../outside/secret.txt"}`,
	`{"path":"out/secret.txt","content":"pwned"}`,
	`{"path":"loopa"}`,
	`{"path":"a.txt/x","content":"x"}`,
	`{"path":"` + strings.Repeat("n", 255) + `","content":"x"}`,
	`{"path":"` + strings.Repeat("n", 256) + `","content":"x"}`,
	`{"path":"x\nfake.txt (1 B)","content":"x"}`,
	`{"path":"a.txt","old_string":"a","new_string":"b"}`,
	`{"path":"a.txt","old_string":"","new_string":"b"}`,
	`{"path":"a.txt","old_string":"line","new_string":"L","replace_all":true}`,
	`{"source":"a.txt","destination":"d/e/a.txt"}`,
	`{"source":"dir","destination":"dir/inside"}`,
	`{"source":"dir","destination":"out/dir"}`,
	`{"source":"nested","destination":"moved"}`,
	`{"path":"nested/.."}`,
	`{"path":"/"}`,
	`{"path":null}`,
	`[]`,
	`{"path":"a.txt","unknown":1}`,
	`{"path":3}`,
	`{"paths":["a.txt","out","out/secret.txt","../outside/secret.txt","loopa","nested"]}`,
	`{"paths":[]}`,
}

// FuzzToolArgs calls every fs tool with arbitrary arguments in a
// workspace with a way out (a link to an outside directory) and a nested
// root. Whatever the arguments: no panic, nothing outside the roots read
// or changed, no Go error text in an answer.
func FuzzToolArgs(f *testing.F) {
	for i := range fuzzTools {
		for _, s := range fuzzSeeds {
			f.Add(uint8(i), s)
		}
	}
	base := f.TempDir()
	f.Fuzz(func(t *testing.T, which uint8, args string) {
		dir, err := os.MkdirTemp(base, "case-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		ws := filepath.Join(dir, "ws")
		outside := filepath.Join(dir, "outside")
		nested := filepath.Join(ws, "nested")
		mustWrite(t, filepath.Join(outside, "secret.txt"), "SENTINEL")
		mustWrite(t, filepath.Join(ws, "a.txt"), "line 1\nline 2\n")
		mustWrite(t, filepath.Join(ws, "dir", "f.txt"), "f")
		mustWrite(t, filepath.Join(nested, "g.txt"), "g")
		mustSymlink(t, outside, filepath.Join(ws, "out"))
		mustSymlink(t, "loopb", filepath.Join(ws, "loopa"))
		mustSymlink(t, "loopa", filepath.Join(ws, "loopb"))
		before := snapshotTree(t, outside)

		tool := fuzzTools[int(which)%len(fuzzTools)]
		ctx := sdk.WithRoots(t.Context(), []string{ws, nested})
		got, err := tool.Execute(ctx, json.RawMessage(args))
		answer := got
		if err != nil {
			answer = err.Error()
		}
		if strings.Contains(answer, "SENTINEL") {
			t.Fatalf("%s(%q) read outside the roots: %q", tool.Name(), args, answer)
		}
		after := snapshotTree(t, outside)
		if before != after {
			t.Fatalf("%s(%q) changed the outside:\n%s\nto\n%s", tool.Name(), args, before, after)
		}
		for _, g := range goTexts {
			if strings.Contains(answer, g) && !strings.Contains(args, g) {
				t.Fatalf("%s(%q) answers with Go's words (%q): %q", tool.Name(), args, g, answer)
			}
		}
		if !utf8.ValidString(answer) && err != nil {
			t.Fatalf("%s(%q): the error is not UTF-8: %q", tool.Name(), args, answer)
		}
		// The roots are still there: no tool may take one away.
		for _, r := range []string{ws, nested} {
			if info, err := os.Stat(r); err != nil || !info.IsDir() {
				t.Fatalf("%s(%q) took away the workspace root %s: %v", tool.Name(), args, r, err)
			}
		}
	})
}

// FuzzCheckArgs: arguments that checkArgs lets through decode without a
// replacement character that was not sent.
func FuzzCheckArgs(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		if checkArgs(json.RawMessage(args)) != nil {
			return
		}
		var v map[string]any
		if json.Unmarshal([]byte(args), &v) != nil {
			return
		}
		sent := strings.Contains(args, "\uFFFD") || bytes.Contains(bytes.ToLower([]byte(args)), []byte(`\ufffd`))
		for k, x := range v {
			s, ok := x.(string)
			if ok && strings.ContainsRune(s, utf8.RuneError) && !sent {
				t.Fatalf("checkArgs passed %q, whose %s decodes to %q", args, k, s)
			}
			if strings.ContainsRune(k, utf8.RuneError) && !sent {
				t.Fatalf("checkArgs passed %q, whose argument name decodes to %q", args, k)
			}
		}
	})
}

// snapshotTree records every entry under dir with its content.
func snapshotTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			b.WriteString(path + " error\n")
			return nil
		}
		b.WriteString(path)
		if d.Type().IsRegular() {
			data, _ := os.ReadFile(path)
			b.WriteString(" " + string(data))
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}
