package telegram

import (
	"html"
	"regexp"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/pipeline/mdscan"
)

func TestRenderHTML(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"escapes", "a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"},
		{"bold and italic", "**bold** and *it* and __b__ and _i_", "<b>bold</b> and <i>it</i> and <b>b</b> and <i>i</i>"},
		{"nested", "**bold *it* x**", "<b>bold <i>it</i> x</b>"},
		{"strike", "~~gone~~", "<s>gone</s>"},
		{"snake_case stays", "call my_func_name now", "call my_func_name now"},
		{"lone stars stay", "2 * 3 * 4", "2 * 3 * 4"},
		{"inline code is not formatted", "use `a**b**<c>`", "use <code>a**b**&lt;c&gt;</code>"},
		{"unclosed code", "a ` b", "a ` b"},
		{"link", "see [the docs](https://x.y/a?b=1&c=\"2\")", `see <a href="https://x.y/a?b=1&amp;c=&quot;2&quot;">the docs</a>`},
		{"link with parentheses", "[w](https://en.wikipedia.org/wiki/Go_(lang))", `<a href="https://en.wikipedia.org/wiki/Go_(lang)">w</a>`},
		{"no javascript links", "[x](javascript:alert(1))", "[x](javascript:alert(1))"},
		{"ordinary link", "[docs](https://a.example/docs)", `<a href="https://a.example/docs">docs</a>`},
		{"mailto link", "[mail](mailto:a@b.example)", `<a href="mailto:a@b.example">mail</a>`},
		{"tg mention dropped", "hi [x](tg://user?id=1)", "hi x"},
		{"tg proxy dropped", "[x](tg://proxy?server=a&port=1&secret=b)", "x"},
		{"tg without slashes dropped", "[**x**](TG:resolve?domain=a)", "<b>x</b>"},
		{"label URL shows target", "[https://a.example](https://b.example)", `https://a.example (<a href="https://b.example">https://b.example</a>)`},
		{"label host shows target", "[bank.example](https://evil.example/login)", `bank.example (<a href="https://evil.example/login">https://evil.example/login</a>)`},
		{"label with a URL in it shows target", "[see www.bank.example now](https://evil.example)", `see www.bank.example now (<a href="https://evil.example">https://evil.example</a>)`},
		{"label URL same as target", "[https://a.example/](https://a.example)", `<a href="https://a.example">https://a.example/</a>`},
		{"label host same as target", "[a.example](https://a.example)", `<a href="https://a.example">a.example</a>`},
		{"javascript stays text", "[click](javascript:alert(1))", "[click](javascript:alert(1))"},
		{"data stays text", "[x](data:text/html,hi)", "[x](data:text/html,hi)"},
		{"file stays text", "[x](file:///etc/passwd)", "[x](file:///etc/passwd)"},
		{"heading", "## Plan\ntext", "<b>Plan</b>\ntext"},
		{"list", "- one\n  * two", "• one\n  • two"},
		{"quote", "> a\n> b\nc", "<blockquote>a\nb</blockquote>\nc"},
		{"fence", "```go\nif a < b {}\n```\nafter", "<pre><code class=\"language-go\">if a &lt; b {}</code></pre>\nafter"},
		{"unclosed fence", "```\nx", "<pre><code>x</code></pre>"},
		{"invalid UTF-8", "a\xffb", "a\uFFFDb"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := RenderHTML(c.in)
			assert.Equal(t, c.want, got)
			_, err := telegramtest.ParseHTML(got)
			assert.NoError(t, err)
		})
	}
}

func TestVisibleLength(t *testing.T) {
	assert.Equal(t, 5, VisibleLength("<b>a&amp;b</b>😀"))
	assert.Equal(t, 0, VisibleLength("<pre><code></code></pre>"))
}

// A chunk cut at Telegram's limit in Markdown stays within it rendered.
func TestChunksFitOnceRendered(t *testing.T) {
	reply := strings.Repeat("**word** `code` [l](https://x.y) 😀 & < > ", 400)
	for _, chunk := range pipeline.Chunk(reply, MessageLimit) {
		assert.LessOrEqual(t, VisibleLength(RenderHTML(chunk)), 4096)
	}
}

// anchor finds the innermost links of rendered HTML, tag any tag.
var (
	anchor = regexp.MustCompile(`<a href="([^"]*)">((?:[^<]|<[^a/][^>]*>|</[^a][^>]*>)*)</a>`)
	tag    = regexp.MustCompile(`<[^>]*>`)
)

func FuzzRenderHTML(f *testing.F) {
	for _, seed := range []string{"**a** _b_ `c` [d](https://e)", "```go\nx\n```", "> q\n- l\n# h", "*_~~x~~_*", "[a](http://b) **[c](https://d)**", "a\xffb ` ``x`` `", "[x](tg://user?id=1) [https://a](https://b) [**a.b**](http://c)"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, markdown string) {
		if len(markdown) > 8192 {
			t.Skip()
		}
		out := RenderHTML(markdown)
		require.True(t, utf8.ValidString(out))
		visible, err := telegramtest.ParseHTML(out)
		require.NoError(t, err, "rendered %q as %q", markdown, out)
		source := len(utf16.Encode([]rune(strings.ToValidUTF8(markdown, "\uFFFD"))))
		require.LessOrEqual(t, VisibleLength(out), source, "rendering made %q longer: %q", markdown, out)
		require.Equal(t, len(utf16.Encode([]rune(visible))), VisibleLength(out))
		for _, a := range anchor.FindAllStringSubmatch(out, -1) {
			href, label := html.UnescapeString(a[1]), html.UnescapeString(tag.ReplaceAllString(a[2], ""))
			require.True(t, mdscan.HasScheme(href, linkSchemes), "%q became a link to %q", markdown, href)
			require.False(t, mdscan.MisleadingLabel(label, href), "%q became a link reading %q to %q", markdown, label, href)
		}
	})
}
