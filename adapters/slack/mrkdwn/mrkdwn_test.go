package mrkdwn

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline/mdscan"
)

func TestRenderMrkdwn(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"escapes", "a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"},
		{"bold and italic", "**bold** and *it* and __b__ and _i_", "*bold* and _it_ and *b* and _i_"},
		{"nested", "**bold *it* x**", "*bold _it_ x*"},
		{"strike", "~~gone~~", "~gone~"},
		{"snake_case stays", "call my_func_name now", "call my_func_name now"},
		{"lone stars stay", "2 * 3 * 4", "2 * 3 * 4"},
		{"inline code is escaped, not formatted", "use `a**b**<c>&`", "use `a**b**&lt;c&gt;&amp;`"},
		{"double backtick span", "``a`b``", "``a`b``"},
		{"unclosed code", "a ` b", "a ` b"},
		{"link", "see [the docs](https://x.y/a?b=1&c=2)", "see <https://x.y/a?b=1&amp;c=2|the docs>"},
		{"link label formatted and escaped", "[**a** & b](http://x.y)", "<http://x.y|*a* &amp; b>"},
		{"no mention inside a link", "[a <@U1>](http://x.y)", "<http://x.y|a &lt;@U1&gt;>"},
		{"link with parentheses", "[w](https://en.wikipedia.org/wiki/Go_(lang))", "<https://en.wikipedia.org/wiki/Go_(lang)|w>"},
		{"no javascript links", "[x](javascript:alert(1))", "[x](javascript:alert(1))"},
		{"ordinary link", "[docs](https://a.example/docs)", "<https://a.example/docs|docs>"},
		{"tg mention dropped", "hi [x](tg://user?id=1)", "hi x"},
		{"tg proxy dropped", "[x](tg://proxy?server=a&port=1&secret=b)", "x"},
		{"tg label keeps a mention", "[<@U1> **b**](tg://user?id=1)", "<@U1> *b*"},
		{"label URL shows target", "[https://a.example](https://b.example)", "<https://b.example>"},
		{"label host shows target", "[bank.example](https://evil.example/a?b&c)", "<https://evil.example/a?b&amp;c>"},
		{"label URL same as target", "[https://a.example/](https://a.example)", "<https://a.example|https://a.example/>"},
		{"javascript stays text", "[click](javascript:alert(1))", "[click](javascript:alert(1))"},
		{"data stays text", "[x](data:text/html,hi)", "[x](data:text/html,hi)"},
		{"no pipe in a link url", "[x](https://a.b/|c)", "[x](https://a.b/|c)"},
		{"bare url kept", "go to https://x.y/?a=1&b=2 now", "go to https://x.y/?a=1&amp;b=2 now"},
		{"user mention kept", "thanks <@U012AB>", "thanks <@U012AB>"},
		{"channel mention kept", "see <#C012AB|general>", "see <#C012AB|general>"},
		{"broadcast escaped", "<!channel> hi", "&lt;!channel&gt; hi"},
		{"fake mention escaped", "<@u1 x>", "&lt;@u1 x&gt;"},
		{"heading", "## Plan\ntext", "*Plan*\ntext"},
		{"heading drops inner bold", "# The **big** _plan_", "*The big _plan_*"},
		{"list kept", "- one\n  * two _x_\n1. three", "- one\n  * two _x_\n1. three"},
		{"quote escaped", "> quoted", "&gt; quoted"},
		{"fence drops info string", "```go\nif a < b && c {}\n```\nafter", "```\nif a &lt; b &amp;&amp; c {}\n```\nafter"},
		{"fence contents untouched", "```\n**x** [a](http://b)\n```", "```\n**x** [a](http://b)\n```"},
		{"unclosed fence is closed", "```\nx", "```\nx\n```"},
		{"invalid UTF-8", "a\xffb", "a\uFFFDb"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Render(c.in)
			assert.Equal(t, c.want, got)
			assert.NoError(t, checkMrkdwn(got))
		})
	}
}

func TestChunkMeasuredAfterRendering(t *testing.T) {
	cases := []struct {
		name  string
		reply string
		limit int
	}{
		// Each & grows fivefold: cut in Markdown at the limit, the
		// chunks would render to about five times it.
		{"escapes grow", strings.Repeat("a && b ", 2000), MessageLimit},
		{"code grows", "```\n" + strings.Repeat("x<y>\n", 2000) + "```", MessageLimit},
		{"emoji count twice", strings.Repeat("😀<", 3000), MessageLimit},
		{"small limit", strings.Repeat("<>& ", 50), 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			chunks := Chunk(c.reply, c.limit)
			require.Greater(t, len(chunks), 1)
			grew := false
			for i, chunk := range chunks {
				n := Length(Render(chunk))
				assert.LessOrEqual(t, n, c.limit, "chunk %d renders to %d", i, n)
				grew = grew || n > Length(chunk)
			}
			assert.True(t, grew, "the test must cover text that grows when rendered")
		})
	}
}

// Chunk measures with measure, not Render: a link Render shortens is
// measured at its full length, so the chunks stay as they were cut (here
// three, though Render alone would fit the reply in one).
func TestChunkCutsAsRecordedSessions(t *testing.T) {
	reply := "[https://a.example](https://b.example/?a&b&c&d)"
	require.LessOrEqual(t, Length(Render(reply)), 50)
	assert.Equal(t, []string{"[https://a.example](https://b.example/?a&b", "&", "c&d)"}, Chunk(reply, 50))
}

func TestChunkKeepsShortReplyWhole(t *testing.T) {
	assert.Equal(t, []string{"**hi** & bye"}, Chunk("**hi** & bye", MessageLimit))
}

func TestLengthCountsUTF16(t *testing.T) {
	assert.Equal(t, 4, Length("a😀é"))
}

// checkMrkdwn reports text Slack would misread: a & that starts no entity,
// a > outside a link or mention, or a <...> that is neither.
func checkMrkdwn(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("invalid UTF-8")
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '&':
			if !strings.HasPrefix(s[i:], "&amp;") && !strings.HasPrefix(s[i:], "&lt;") && !strings.HasPrefix(s[i:], "&gt;") {
				return fmt.Errorf("raw & at %d in %q", i, s)
			}
		case '>':
			return fmt.Errorf("raw > at %d in %q", i, s)
		case '<':
			end := strings.IndexByte(s[i:], '>')
			if end < 0 {
				return fmt.Errorf("unclosed < at %d in %q", i, s)
			}
			inner := s[i+1 : i+end]
			target, _, _ := strings.Cut(inner, "|")
			switch {
			case strings.ContainsAny(inner, "<\n"):
				return fmt.Errorf("broken <...> at %d in %q", i, s)
			case strings.HasPrefix(target, "@") || strings.HasPrefix(target, "#"):
				if !isSlackID(target[1:]) {
					return fmt.Errorf("bad mention %q", inner)
				}
			case !mdscan.HasScheme(target, linkSchemes):
				return fmt.Errorf("bad link %q", inner)
			default:
				if _, label, ok := strings.Cut(inner, "|"); ok && mdscan.MisleadingLabel(unescapeMrkdwn(label), unescapeMrkdwn(target)) {
					return fmt.Errorf("link %q reads as another address than its target", inner)
				}
			}
			i += end
		}
	}
	return nil
}

func unescapeMrkdwn(s string) string {
	return strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">").Replace(s)
}

func FuzzRender(f *testing.F) {
	for _, seed := range []string{
		"**b** *i* _i_ ~~s~~ `c` [l](https://x.y?a&b) <@U1> <!here> & < >",
		"# h **b**\n- a\n> q\n```go\n<x>\n```\n```\nopen",
		"[a [b](http://c)](http://d) [<@U1>](http://e) ``x`y`` `` a",
		"<#C1|n> <@U1|x> <@> <#> <http://a|b> a&amp;b",
		"[x](tg://user?id=1) [https://a](https://b) [**a.b**](http://c) [a.b](http://a.b)",
		"[<@U1><@U1>](tg://a) [**x](tg://b) y** [*a](tg:c*) [~~a](tg://d) ~~ [__a](tg://e)__",
	} {
		f.Add(seed, 40)
	}
	f.Fuzz(func(t *testing.T, markdown string, limit int) {
		rendered := Render(markdown)
		if err := checkMrkdwn(rendered); err != nil {
			t.Fatal(err)
		}
		// Chunk measures with the links of recorded sessions; it holds
		// only while Render is never longer.
		if n, measured := Length(rendered), Length(measure(markdown)); n > measured {
			t.Fatalf("Render is %d long, Chunk measured %d: %q", n, measured, markdown)
		}
		limit = 16 + int(uint(limit)%200)
		for i, chunk := range Chunk(markdown, limit) {
			if n := Length(Render(chunk)); n > limit {
				t.Fatalf("chunk %d renders to %d, limit %d: %q", i, n, limit, chunk)
			}
		}
	})
}
