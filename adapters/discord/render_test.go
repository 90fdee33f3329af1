package discord

import (
	"strings"
	"testing"

	"github.com/replyflow/replyflow/pipeline"
)

func TestRender(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"#### Title", "**Title**"},
		{"###### Deep ##", "**Deep**"},
		{"   ##### Indented", "**Indented**"},
		{"#### **Bold** title", "**Bold title**"},
		{"#### C#", "**C#**"},
		{"# One\n## Two\n### Three", "# One\n## Two\n### Three"}, // Discord's own headings
		{"####NoSpace", "####NoSpace"},
		{"    #### indented code", "    #### indented code"},
		{"```md\n#### in code\n```\n#### after", "```md\n#### in code\n```\n**after**"},
		{"**bold** _it_ ~~s~~ `c` [l](https://x.y) > q\n- a\n1. b", "**bold** _it_ ~~s~~ `c` [l](https://x.y) > q\n- a\n1. b"},
		{"<@1> @everyone", "<@1> @everyone"},
		{"[docs](https://a.example/docs)", "[docs](https://a.example/docs)"},
		{"see [https://a.example](https://b.example).", "see https://a.example (https://b.example)."},
		{"[bank.example](https://evil.example/login) and [a.example](https://a.example)", "bank.example (https://evil.example/login) and [a.example](https://a.example)"},
		{"#### [https://a.example](https://b.example)", "**https://a.example (https://b.example)**"},
		{"`[https://a.example](https://b.example)`", "`[https://a.example](https://b.example)`"},
		{"```\n[https://a.example](https://b.example)\n```", "```\n[https://a.example](https://b.example)\n```"},
		{`\[https://a.example](https://b.example)`, `\[https://a.example](https://b.example)`},
		{"[x](tg://user?id=1) [click](javascript:alert(1))", "[x](tg://user?id=1) [click](javascript:alert(1))"},
		{"", ""},
	} {
		if got := Render(tc.in); got != tc.want {
			t.Errorf("Render(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Rendering never lengthens a chunk, so the workflow's cut at 2000 holds.
func FuzzRenderNeverLengthens(f *testing.F) {
	for _, seed := range []string{"#### a", "###### #", "#### ** **", "```\n#### x\n```\n##### y ####", "####  \t x", "#### 🚀🚀", "[https://a](https://b) `[c.d](http://e)` [f](https://g)"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got := Render(s); unitLen(got) > unitLen(s) {
			t.Errorf("Render(%q) = %q is longer", s, got)
		}
	})
}

func TestFit(t *testing.T) {
	exact := strings.Repeat("🚀", MessageLimit/2) // two UTF-16 units each
	if got, cut := fit(exact); cut || got != exact {
		t.Errorf("fit of exactly %d units cut it", MessageLimit)
	}
	got, cut := fit(exact + "x")
	if !cut || unitLen(got) > MessageLimit || !strings.HasSuffix(got, "🚀…") {
		t.Errorf("fit of %d units = %d units, cut %v; want at most %d ending in …", MessageLimit+1, unitLen(got), cut, MessageLimit)
	}
	for _, chunk := range pipeline.Chunk(strings.Repeat("#### heading\n", 400), MessageLimit) {
		if _, cut := fit(Render(chunk)); cut {
			t.Errorf("a chunk of pipeline.Chunk needed cutting once rendered")
		}
	}
}
