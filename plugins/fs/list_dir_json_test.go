package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// plainListing is a dirListing without its MarshalJSON: what
// encoding/json makes of its fields.
type plainListing dirListing

// TestListingJSON checks that a listing encodes itself as encoding/json
// encodes it: by hand at every level with every member, and list_dir's
// own results on a tree with names that need escaping.
func TestListingJSON(t *testing.T) {
	size := int64(42)
	leaf := entryInfo{Name: "deep <&> \"q\"", Type: typeFile, Size: &size}
	d5 := []dirEntry5{leaf, {Name: "l", Type: typeSymlink, Target: "../t\u2028"}}
	d4 := []dirEntry4{{entryInfo: entryInfo{Name: "d5", Type: typeDirectory}, Children: d5, Truncated: true}, {entryInfo: entryInfo{Name: "empty", Type: typeDirectory}, Children: []dirEntry5{}}}
	d3 := []dirEntry3{{entryInfo: entryInfo{Name: "d4", Type: typeDirectory}, Children: d4}}
	d2 := []dirEntry2{{entryInfo: entryInfo{Name: "d3", Type: typeDirectory}, Children: d3}, {entryInfo: entryInfo{Name: "gone", Type: typeDirectory, Error: "no such file or directory"}}}
	d1 := []dirEntry1{
		{entryInfo: entryInfo{Name: "d2", Type: typeDirectory}, Children: d2},
		{entryInfo: entryInfo{Name: "p", Type: typeOther, Kind: "fifo"}},
		{entryInfo: entryInfo{Name: `"\xff"`, Type: typeUnknown, Error: "permission denied\t\x01"}},
		{entryInfo: entryInfo{Name: "zero", Type: typeFile, Size: new(int64)}},
	}
	for _, d := range []dirListing{
		{Path: "a/b", Entries: d1, Truncated: true, More: 3, Hidden: 2, Excluded: 1},
		{Path: ".", Entries: []dirEntry1{}},
	} {
		checkListingJSON(t, d)
	}

	got, err := dirListing{Path: "x"}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"path":"x","entries":[],"truncated":false,"more":0,"hidden":0,"excluded":0}`; string(got) != want {
		t.Errorf("a listing without entries encodes as %s, want %s", got, want)
	}

	root := t.TempDir()
	for _, name := range []string{"a <b> & c", "q\"uote", "back\\slash", "tab\there", "sep\u2028x", "é", "bad\xffname", "sub/in \"sub\"", "sub/deeper/x<y"} {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(strings.Repeat("x", len(name))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a <b> & c\u2029", filepath.Join(root, "link&")); err != nil {
		t.Fatal(err)
	}
	for _, args := range []map[string]any{
		{},
		{"names_only": true},
		{"depth": 3},
		{"depth": 3, "max_entries": 4},
	} {
		_, structured, _ := listStructured(t, root, args)
		var d dirListing
		if err := json.Unmarshal(structured, &d); err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(plainListing(d))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(structured, want) {
			t.Errorf("list_dir(%v) answers\n%s\nencoding/json writes\n%s", args, structured, want)
		}
	}
}

// checkListingJSON checks that d encodes itself as encoding/json
// encodes its fields.
func checkListingJSON(t *testing.T, d dirListing) {
	t.Helper()
	got, err := d.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(plainListing(d))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the listing encodes itself as\n%s\nencoding/json writes\n%s", got, want)
	}
}

// FuzzListingJSON checks appendJSONString against encoding/json on any
// string, in a name, a target and an error.
func FuzzListingJSON(f *testing.F) {
	for _, s := range []string{"", "plain.txt", "a<b>&c", "\"\\\b\f\n\r\t\x00\x1f\x7f", "\u2028\u2029é日本", "\xff\xfe\xc3", "\xe2\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("appendJSONString(%q) = %s, encoding/json writes %s", s, got, want)
		}
		checkListingJSON(t, dirListing{Path: s, Entries: []dirEntry1{{entryInfo: entryInfo{Name: s, Type: typeSymlink, Target: s, Error: s}}}})
	})
}
