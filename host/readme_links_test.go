package host_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/agenthost/agenthost/internal/plugintest"
)

// readmeMaxLines is how long README.md may grow: a newcomer reads it in
// five minutes, and the rest lives in docs/.
const readmeMaxLines = 250

// TestREADMELinks checks the documentation as a reader walks it: README.md
// is at most readmeMaxLines lines and links every page of docs/ directly;
// every relative link of README.md, of docs/*.md and of the examples'
// README.md files leads to a file that exists, and every #anchor to a
// heading of its page, named as GitHub names it.
func TestREADMELinks(t *testing.T) {
	t.Parallel()
	root := plugintest.Root()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Glob(filepath.Join(root, "examples", "*", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("docs/ holds no page")
	}
	readme := filepath.Join(root, "README.md")
	pages := append(append([]string{readme}, docs...), examples...)

	text, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(text), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move the detail to a page of docs/", n, readmeMaxLines)
	}

	anchors := map[string]map[string]bool{} // a Markdown file → its anchors
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := anchors[path]; ok {
			return a, nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		anchors[path] = headingAnchors(string(text))
		return anchors[path], nil
	}

	linked := map[string]bool{} // the files README.md links to
	for _, page := range pages {
		rel, _ := filepath.Rel(root, page)
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, link := range relativeLinks(string(text)) {
			target, anchor, _ := strings.Cut(link, "#")
			file := page
			if target != "" {
				file = filepath.Join(filepath.Dir(page), filepath.FromSlash(target))
			}
			if _, err := os.Stat(file); err != nil {
				t.Errorf("%s links to %s, which does not exist", rel, link)
				continue
			}
			if page == readme {
				linked[filepath.Clean(file)] = true
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(file, ".md") {
				t.Errorf("%s links to %s: an anchor in a file that is not Markdown", rel, link)
				continue
			}
			have, err := anchorsOf(file)
			if err != nil {
				t.Fatal(err)
			}
			if !have[anchor] {
				t.Errorf("%s links to %s: no heading of %s has the anchor #%s", rel, link, filepath.Base(file), anchor)
			}
		}
	}
	for _, page := range docs {
		if !linked[filepath.Clean(page)] {
			rel, _ := filepath.Rel(root, page)
			t.Errorf("README.md does not link to %s: every page of docs/ is one link away from it", rel)
		}
	}
}

var (
	fenceRE    = regexp.MustCompile("(?ms)^ *```.*?^ *```[^\n]*$")
	codeSpanRE = regexp.MustCompile("`[^`\n]*`")
	linkRE     = regexp.MustCompile(`\[[^\]\n]*\]\(([^)\s]+)\)`)
	headingRE  = regexp.MustCompile(`(?m)^#{1,6} +(.+?)[ #]*$`)
	schemeRE   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// relativeLinks returns the targets of the Markdown text's inline links
// that lead inside the repository (no scheme), outside code blocks and
// code spans.
func relativeLinks(text string) []string {
	text = codeSpanRE.ReplaceAllString(fenceRE.ReplaceAllString(text, ""), "")
	var links []string
	for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
		if !schemeRE.MatchString(m[1]) {
			links = append(links, m[1])
		}
	}
	return links
}

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown text: the heading's text in lower case, without punctuation but
// '-' and '_', its spaces turned to '-'; a repeated anchor gets "-1",
// "-2", ... after it.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, m := range headingRE.FindAllStringSubmatch(fenceRE.ReplaceAllString(text, ""), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		anchor := b.String()
		if n := seen[anchor]; n > 0 {
			seen[anchor] = n + 1
			anchor = fmt.Sprintf("%s-%d", anchor, n)
		} else {
			seen[anchor] = 1
		}
		anchors[anchor] = true
	}
	return anchors
}
