package models

import (
	"context"
	"strings"
	"time"

	"github.com/replyflow/replyflow/pipeline"
)

// DemoName is the model used when none is configured.
const DemoName = "demo/echo"

// Demo answers offline and deterministically, so replyflow works on a
// laptop with no model configured and tests have a stable reply.
type Demo struct {
	Delay time.Duration
}

// Name implements Model.
func (Demo) Name() string { return DemoName }

// Complete echoes the last user message with a hint that a real model can
// be set.
func (m Demo) Complete(ctx context.Context, p Prompt) (Completion, error) {
	if m.Delay > 0 {
		select {
		case <-ctx.Done():
			return Completion{}, ctx.Err()
		case <-time.After(m.Delay):
		}
	}
	last := ""
	for _, msg := range p.Messages {
		if msg.Role == "user" {
			last = msg.Text
		}
	}
	text := "You said: " + strings.TrimSpace(pipeline.StripEnvelope(last)) + "\n\n(demo model: set REPLYFLOW_MODEL to talk to a real one)"
	// The demo takes no reasoning effort, and reports no usage: it costs
	// nothing, and an estimate would pass for a provider's count.
	return Completion{Text: text, ThinkIgnored: p.thinks()}, nil
}
