package budget

import (
	"context"
	"crypto/sha256"
	"fmt"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/internal/bounded"
	"github.com/replyflow/replyflow/pipeline"
)

// Shown remembers what each message the bot sent or edited last shows,
// so that a preview's edit to the same is not sent (Skips): it would
// change nothing on screen and still cost a call of the chat's budget. It keeps a digest
// of the text and buttons per message, for at most the 4,096 messages
// sent or edited last; what it forgot is edited as usual.
type Shown struct{ m *bounded.Map }

// NewShown is an empty Shown.
func NewShown() *Shown { return &Shown{m: bounded.New(4096)} }

// Same says whether message (a key the adapter makes unique: chat and
// message ID) is known to show text and buttons already.
func (s *Shown) Same(message, text string, buttons []pipeline.Button) bool {
	was, ok := s.m.Get(message)
	return ok && was == digest(text, buttons)
}

// Skips says whether an edit made with ctx may go unsent because message
// shows text and buttons already. Only a streaming preview's edit
// (adapters.PriorityPreview) is skipped: what Shown remembers is what
// this process sent last, and another worker's attempt may have edited
// the message since (a preview showing part of the answer). An edit of
// any other priority, the one that turns a preview into the reply among
// them, is sent; the platform takes an edit to the same as a success.
func (s *Shown) Skips(ctx context.Context, message, text string, buttons []pipeline.Button) bool {
	return adapters.PriorityOf(ctx) == adapters.PriorityPreview && s.Same(message, text, buttons)
}

// Put records that message shows text and buttons now.
func (s *Shown) Put(message, text string, buttons []pipeline.Button) {
	s.m.Put(message, digest(text, buttons))
}

func digest(text string, buttons []pipeline.Button) string {
	h := sha256.New()
	h.Write([]byte(text))
	for _, b := range buttons {
		fmt.Fprintf(h, "\x00%q\x00%q", b.Text, b.Action)
	}
	return string(h.Sum(nil))
}
