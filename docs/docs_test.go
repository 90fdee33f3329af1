// Package docs holds replyflow's documentation pages; its test keeps the
// links between them, and from the README, true.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeMaxLines keeps the README a front door: what replyflow is, why,
// the two commands, a real model, the platforms and where to go next;
// everything else is a page here.
const readmeMaxLines = 400

var (
	linkRE    = regexp.MustCompile(`\[[^\]]+\]\(([^)\s]+)\)`)
	headingRE = regexp.MustCompile(`^#{1,6} (.*)$`)
)

// pages are the Markdown files the links are checked in, by their path
// from the repository's root.
func pages(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.md")
	require.NoError(t, err)
	out := map[string]string{}
	for _, f := range append(files, "../README.md", "../deploy/README.md") {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		out[filepath.Clean(filepath.Join("docs", f))] = string(data)
	}
	return out
}

// outsideFences is the text's lines that are not inside a fenced code
// block, where a link or a heading is only text.
func outsideFences(text string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, line)
		}
	}
	return out
}

// anchor is the fragment GitHub gives a heading: lower case, letters,
// digits, spaces, hyphens and underscores kept, spaces made hyphens.
func anchor(heading string) string {
	heading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

func anchors(text string) map[string]bool {
	out := map[string]bool{}
	for _, line := range outsideFences(text) {
		if m := headingRE.FindStringSubmatch(line); m != nil {
			out[anchor(m[1])] = true
		}
	}
	return out
}

// links are a page's relative links, each resolved to a path from the
// repository's root and its fragment.
func links(page, text string) [][2]string {
	var out [][2]string
	for _, line := range outsideFences(text) {
		for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			if path == "" {
				path = page
			} else {
				path = filepath.Clean(filepath.Join(filepath.Dir(page), path))
			}
			out = append(out, [2]string{path, frag})
		}
	}
	return out
}

func TestEveryLinkResolves(t *testing.T) {
	all := pages(t)
	for page, text := range all {
		for _, l := range links(page, text) {
			path, frag := l[0], l[1]
			if _, err := os.Stat(filepath.Join("..", path)); err != nil {
				t.Errorf("%s links to %s, which does not exist", page, path)
				continue
			}
			if frag == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			target, ok := all[path]
			if !ok {
				data, err := os.ReadFile(filepath.Join("..", path))
				require.NoError(t, err)
				target = string(data)
			}
			assert.True(t, anchors(target)[frag], "%s links to %s#%s, a heading %s does not have", page, path, frag, path)
		}
	}
}

func TestEveryPageIsReachableFromTheREADME(t *testing.T) {
	all := pages(t)
	seen := map[string]bool{"README.md": true}
	next := []string{"README.md"}
	for len(next) > 0 {
		page := next[0]
		next = next[1:]
		for _, l := range links(page, all[page]) {
			if _, ok := all[l[0]]; ok && !seen[l[0]] {
				seen[l[0]] = true
				next = append(next, l[0])
			}
		}
	}
	for page := range all {
		assert.True(t, seen[page], "%s is not linked from the README or a page it links to", page)
	}
}

func TestTheREADMEIsAFrontDoor(t *testing.T) {
	lines := strings.Count(pages(t)["README.md"], "\n")
	assert.LessOrEqual(t, lines, readmeMaxLines, "the README has %d lines: move detail to a page in docs/", lines)
}
