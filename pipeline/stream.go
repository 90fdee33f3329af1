package pipeline

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// StreamMode is how an answer is shown while the model writes it
// (REPLYFLOW_STREAM, REPLYFLOW_STREAM_BY_CHANNEL).
type StreamMode string

const (
	// StreamOff sends the answer once it is complete, as before.
	StreamOff StreamMode = "off"
	// StreamPreview shows one message that is edited as the text grows;
	// the final answer replaces it.
	StreamPreview StreamMode = "preview"
	// StreamBlocks sends each finished paragraph as its own message.
	StreamBlocks StreamMode = "blocks"
)

// ParseStreamMode reads a mode from configuration.
func ParseStreamMode(s string) (StreamMode, error) {
	switch m := StreamMode(strings.ToLower(strings.TrimSpace(s))); m {
	case StreamOff, StreamPreview, StreamBlocks:
		return m, nil
	}
	return "", fmt.Errorf("stream mode %q: want off, preview or blocks", s)
}

// Shown is what the user already saw of a model step's answer while it
// streamed: the preview message, or the blocks sent. It travels in the
// model activity's heartbeat details and in its result or failure, so an
// attempt that comes after (a retry on another worker, the next model
// of the fallback chain) edits the same preview and never sends a block
// twice, and the final delivery replaces the preview instead of posting
// a second copy. Bounded: a preview shows at most the channel's chunk
// limit, and at most MaxStreamBlocks blocks are sent.
type Shown struct {
	Mode StreamMode `json:"mode"`
	// PreviewID is the platform's ID of the preview message.
	PreviewID string `json:"preview_id,omitempty"`
	// Blocks are the platform IDs of the blocks sent, in order.
	Blocks []string `json:"blocks,omitempty"`
	// Text is the answer as the user saw it: the preview's text, or the
	// blocks joined. A later attempt continues the answer after it.
	Text string `json:"text,omitempty"`
}

// Empty is true when nothing was shown.
func (s *Shown) Empty() bool { return s == nil || (s.PreviewID == "" && len(s.Blocks) == 0) }

// AfterShown is what of reply follows the blocks already sent (shown,
// the answer's start as sent): the reply is delivered from there.
func AfterShown(reply, shown string) string {
	if rest, ok := strings.CutPrefix(reply, shown); ok {
		return strings.TrimSpace(rest)
	}
	if strings.TrimSpace(shown) == strings.TrimSpace(reply) {
		return ""
	}
	// The answer does not start with what was sent (a model that did not
	// continue it): all of it, rather than lose a part.
	return reply
}

// MaxStreamBlocks bounds the blocks one answer sends while streaming;
// what comes after them is delivered with the final answer.
const MaxStreamBlocks = 40

// StoppedMark ends a preview whose turn was stopped mid-stream.
const StoppedMark = "\n\n⏹ (stopped)"

// Showable is the part of a partial answer that may be shown now, and
// false while the text could still become NO_REPLY or HEARTBEAT_OK (a
// silent answer must never flash on screen). A leading token is
// stripped as NormalizeReply strips it, and a trailing word that could
// be the start of one is held back until the next delta decides it.
func Showable(partial string) (string, bool) {
	text := strings.TrimSpace(partial)
	if couldBeToken(text) {
		return "", false
	}
	text, ok := NormalizeReply(text)
	if !ok || couldBeToken(text) {
		return "", false
	}
	if i := strings.LastIndexAny(text, " \n\t"); i >= 0 && couldBeToken(text[i+1:]) {
		text = strings.TrimSpace(text[:i])
	}
	return text, text != ""
}

// couldBeToken: s is empty, or a case-insensitive prefix of a token.
func couldBeToken(s string) bool {
	for _, token := range []string{SilentToken, HeartbeatToken} {
		if len(s) <= len(token) && strings.EqualFold(s, token[:len(s)]) {
			return true
		}
	}
	return false
}

// PreviewText is text cut to fit one message of limit characters (the
// channel's chunk limit), with an ellipsis when cut: a preview is one
// message, and the final answer is chunked as usual.
func PreviewText(text string, limit int) string {
	if limit <= 0 || utf8.RuneCountInString(text) <= limit {
		return text
	}
	cut := limit - 2
	i := 0
	for n := 0; n < cut; n++ {
		_, size := utf8.DecodeRuneInString(text[i:])
		i += size
	}
	return strings.TrimRight(text[:i], " \n") + " …"
}

// PreviewPacing decides when a preview is sent or edited: not before the
// stream has run FirstAfter (an answer done sooner goes out as one
// message, with no preview to flicker), then at most once per Every
// (chat platforms limit edits per chat to about one a second).
type PreviewPacing struct {
	FirstAfter time.Duration
	Every      time.Duration
}

// Due says whether the preview may be sent or edited at now, for a
// stream that started at start and last touched the preview at last
// (zero before the preview exists).
func (p PreviewPacing) Due(now, start, last time.Time) bool {
	if last.IsZero() {
		return now.Sub(start) >= p.FirstAfter
	}
	return now.Sub(last) >= p.Every
}

// BlockCoalescer cuts a streamed answer into blocks to send as their own
// messages: each at least Min and at most Max characters where the text
// allows, cut after a paragraph (else a line, else a word), never inside
// a fenced code block. A code block longer than Max is held until it
// closes; Flush (after a second without new text) sends what is pending
// unless it ends inside one. Push scans what is held at each delta, so a
// caller bounds how much it lets pile up (the model step stops feeding it
// once an open fence is longer than a message).
type BlockCoalescer struct {
	Min, Max int
	pending  string
	// taken counts the bytes of the pushed text that blocks (and the
	// white space between them) consumed.
	taken int
}

// Block is a block's text and the byte offset in the pushed text where
// what it consumed ends.
type Block struct {
	Text string
	End  int
}

// Push adds a delta and returns the blocks it completed.
func (c *BlockCoalescer) Push(delta string) []Block {
	c.pending += delta
	var out []Block
	for utf8.RuneCountInString(c.pending) >= c.Min {
		cut := c.cut()
		if cut <= 0 {
			break
		}
		out = append(out, c.take(cut))
	}
	return out
}

// Flush returns what is pending as one block, with ok false when
// nothing is or the text ends inside a code block (sending it would cut
// the fence).
func (c *BlockCoalescer) Flush() (Block, bool) {
	if strings.TrimSpace(c.pending) == "" || endsInsideFence(c.pending) {
		return Block{}, false
	}
	return c.take(len(c.pending)), true
}

// Pending is the text not yet sent as a block.
func (c *BlockCoalescer) Pending() string { return c.pending }

func (c *BlockCoalescer) take(n int) Block {
	block := trimBlock(c.pending[:n])
	rest := strings.TrimLeft(c.pending[n:], "\n")
	c.taken += len(c.pending) - len(rest)
	c.pending = rest
	return Block{Text: block, End: c.taken}
}

// trimBlock drops a block's leading blank lines and trailing white space.
// Its first line keeps its indentation: Markdown reads it (indented four
// spaces, "~~~" is text; trimmed, it would open a fence).
func trimBlock(s string) string {
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 || strings.TrimSpace(s[:i]) != "" {
			break
		}
		s = s[i+1:]
	}
	return strings.TrimRightFunc(s, unicode.IsSpace)
}

// cut is the byte offset to cut the pending text at, 0 for not yet: the
// last paragraph end between Min and Max characters, else (past Max) the
// last line end or space before Max outside a code block, else the end
// of the code block that crosses Max once it is closed.
func (c *BlockCoalescer) cut() int {
	lines, blocks := markdownLines(c.pending)
	inCode := func(li int) bool { return lines[li].kind == openerLine || lines[li].kind == codeLine }
	maxAt := byteOffset(c.pending, c.Max)
	best := 0
	// Paragraph ends: an empty line after a line outside code. The
	// characters before each are counted on from the last one's, so a
	// text of many empty lines costs one pass, not one per line.
	counted, runes := 0, 0
	for li := 1; li < len(lines); li++ {
		l := lines[li]
		if l.start >= len(c.pending) || strings.TrimSpace(c.pending[l.start:l.end]) != "" || l.end >= len(c.pending) {
			continue
		}
		if inCode(li) || inCode(li-1) {
			continue
		}
		at := l.end + 1
		if at > maxAt {
			break
		}
		runes += utf8.RuneCountInString(c.pending[counted:at])
		counted = at
		if runes >= c.Min {
			best = at
		}
	}
	if best > 0 || utf8.RuneCountInString(c.pending) <= c.Max {
		return best
	}
	// Past Max without a paragraph end: the last line end before Max
	// outside code, else the last space (or Max itself) when Max is in
	// text, else the end of the code block Max falls in, once it closed.
	for li := len(lines) - 1; li >= 0; li-- {
		if l := lines[li]; l.end < maxAt && !inCode(li) && l.end > l.start {
			return l.end + 1
		}
	}
	if li := lineAt(lines, maxAt); lines[li].kind == textLine && !mayOpenFence(c.pending[lines[li].start:lines[li].end], lines[li].end == len(c.pending)) {
		// At the last space before Max, else at Max; never where the
		// block would end in what reads as a fence opener on its own
		// ("``` a`b" is text whole, but "```" cut from it opens a fence).
		candidates := []int{maxAt}
		if i := strings.LastIndexAny(c.pending[lines[li].start:maxAt], " \t"); i > 0 {
			candidates = []int{lines[li].start + i + 1, maxAt}
		}
		for _, at := range candidates {
			if !endsInsideFence(trimBlock(c.pending[:at])) {
				return at
			}
		}
	}
	for _, b := range blocks {
		if lines[b.opener].start < maxAt && (b.closer < 0 || lines[b.closer].end >= maxAt) {
			if b.closer >= 0 && lines[b.closer].end < len(c.pending) {
				return lines[b.closer].end + 1
			}
			return 0
		}
	}
	return 0
}

// mayOpenFence: a line still being written (partial) that could yet
// become a fence opener: fence characters so far ("~~", two backticks), or a
// fence with the start of its info string ("```go", "~~~ 0"), which the
// rest of the line may still leave an opener.
func mayOpenFence(line string, partial bool) bool {
	if !partial {
		return false
	}
	trimmed := strings.TrimLeft(line, " ")
	if len(line)-len(trimmed) > 3 {
		return false
	}
	return trimmed == "" || strings.Trim(trimmed, "`") == "" || strings.Trim(trimmed, "~") == "" ||
		strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")
}

// endsInsideFence: text stops inside an open fenced code block.
func endsInsideFence(text string) bool {
	_, blocks := markdownLines(text)
	return len(blocks) > 0 && blocks[len(blocks)-1].closer < 0
}

// byteOffset is the byte offset of the n-th character, or len(s).
func byteOffset(s string, n int) int {
	i := 0
	for k := 0; k < n && i < len(s); k++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return i
}
