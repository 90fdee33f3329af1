package mdscan

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIsFenceAndHeading(t *testing.T) {
	assert.True(t, IsFence("```go"))
	assert.True(t, IsFence("   ```"))
	assert.False(t, IsFence("    ```"), "four spaces make indented code, not a fence")
	assert.False(t, IsFence("``"))
	assert.Equal(t, 2, HeadingLevel("## Plan"))
	assert.Equal(t, 0, HeadingLevel("##Plan"))
	assert.Equal(t, 0, HeadingLevel("## "))
	assert.Equal(t, 0, HeadingLevel("####### seven"))
}

func TestEmphasisDelimiters(t *testing.T) {
	cases := []struct {
		name, s, delim string
		at, closes     int // closes is -1 when the span does not open or close
	}{
		{"star span", "a *b* c", "*", 2, 4},
		{"star before space opens nothing", "2 * 3 * 4", "*", 2, -1},
		{"snake_case does not open", "my_func_name", "_", 2, -1},
		{"underscore span", "_a b_", "_", 0, 4},
		{"underscore closing inside a word skipped", "_a_b c_", "_", 0, 6},
		{"double star", "**b** x", "**", 0, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := -1
			if Opens(c.s, c.at, c.delim) {
				got = Closing(c.s, c.at+len(c.delim), c.delim)
			}
			assert.Equal(t, c.closes, got)
		})
	}
}

func TestCodeSpan(t *testing.T) {
	cases := []struct {
		s, code string
		end     int
		ok      bool
	}{
		{"`a*b` x", "a*b", 5, true},
		{"``a`b`` x", "a`b", 7, true},
		{"`a``b` x", "a``b", 6, true},
		{"`` x", "", 2, false},
		{"` open", "", 1, false},
	}
	for _, c := range cases {
		code, end, ok := CodeSpan(c.s, 0)
		assert.Equal(t, []any{c.code, c.end, c.ok}, []any{code, end, ok}, c.s)
	}
}

func TestLink(t *testing.T) {
	schemes := []string{"https://"}
	cases := []struct {
		s, text, url string
		end          int
		ok           bool
	}{
		{"[a](https://x.y) b", "a", "https://x.y", 16, true},
		{"[w](https://x.y/Go_(lang))", "w", "https://x.y/Go_(lang)", 26, true},
		{"[a]( https://x.y )", "a", "https://x.y", 18, true},
		{"[a](http://x.y)", "", "", 0, false},
		{"[a](https://x y)", "", "", 0, false},
		{"[](https://x.y)", "", "", 0, false},
		{"[a [b]](https://x.y)", "", "", 0, false},
		{"[a](https://x.y", "", "", 0, false},
		{"[a](https://)", "", "", 0, false},
	}
	for _, c := range cases {
		text, url, end, ok := Link(c.s, 0, schemes)
		assert.Equal(t, []any{c.text, c.url, c.end, c.ok}, []any{text, url, end, ok}, c.s)
	}
}

func TestMisleadingLabel(t *testing.T) {
	cases := []struct {
		text, url string
		misleads  bool
	}{
		{"docs", "https://a.example/docs", false},
		{"the docs for v2.1", "https://a.example/docs", false},
		{"https://a.example", "https://b.example", true},
		{"HTTPS://A.example/", "https://a.example", false},
		{"http://a.example", "https://a.example", false},
		{"a.example", "https://a.example", false},
		{"bank.example", "https://evil.example", true},
		{"**bank.example**", "https://evil.example", true},
		{"www.bank.example", "https://evil.example", true},
		{"see www.bank.example now", "https://evil.example", true},
		{"see https://a.example", "https://a.example", false},
		{"a@b.example", "mailto:a@b.example", false},
		{"a@b.example", "mailto:c@evil.example", true},
		{"v2.1", "https://a.example", false},
		{"e.g.", "https://a.example", false},
	}
	for _, c := range cases {
		assert.Equal(t, c.misleads, MisleadingLabel(c.text, c.url), "[%s](%s)", c.text, c.url)
	}
}
