package webchat

import (
	"bytes"
	"html"
	"regexp"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// Bot messages are Markdown (models answer in it), and the page shows
// them rendered: goldmark turns the text into HTML, leaving out any raw
// HTML in it (no html.WithUnsafe), and bluemonday then keeps only the
// elements and attributes Markdown makes, links to http, https and mailto
// only. So nothing in a reply runs in the page: no script, no event
// handler, no javascript: link, no style. Images are left out as well: a
// reply's image would load from wherever the model pointed, telling that
// server who reads the chat. A user's own messages are shown as typed.
var (
	markdown = goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.Linkify))
	sanitize = markdownPolicy()
)

func markdownPolicy() *bluemonday.Policy {
	p := bluemonday.NewPolicy()
	p.AllowElements("p", "br", "hr", "strong", "em", "del", "code", "pre", "blockquote",
		"ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6",
		"table", "thead", "tbody", "tr", "th", "td")
	p.AllowAttrs("start").Matching(bluemonday.Integer).OnElements("ol")
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^language-[\w+#.-]{1,40}$`)).OnElements("code")
	p.AllowAttrs("align").Matching(regexp.MustCompile(`^(left|center|right)$`)).OnElements("th", "td")
	p.AllowAttrs("href").OnElements("a")
	p.AllowURLSchemes("http", "https", "mailto")
	p.RequireParseableURLs(true)
	p.AllowRelativeURLs(false)
	p.RequireNoFollowOnLinks(true)
	p.RequireNoReferrerOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(true)
	return p
}

// renderMarkdown is the HTML the page shows for a bot message's text.
func renderMarkdown(text string) string {
	var b bytes.Buffer
	if err := markdown.Convert([]byte(text), &b); err != nil {
		// goldmark fails only on a failing writer, which a bytes.Buffer
		// is not; the text is then shown as text.
		return "<p>" + html.EscapeString(text) + "</p>"
	}
	return string(sanitize.SanitizeBytes(b.Bytes()))
}
