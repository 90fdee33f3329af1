package activities

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/replyflow/replyflow/pipeline"
)

// Model produces the agent's reply for one turn.
type Model interface {
	// Name is the provider/model name shown in state and logs.
	Name() string
	Reply(ctx context.Context, req pipeline.TurnRequest) (string, error)
}

// DemoModelName is the model used when none is configured.
const DemoModelName = "demo/echo"

// NewModel returns the model named by REPLYFLOW_MODEL. An empty name or
// DemoModelName selects the offline demo model, which takes demoDelay to
// "think" so the demo shows typing and the thinking reaction.
func NewModel(name string, demoDelay time.Duration) (Model, error) {
	switch name {
	case "", DemoModelName:
		return DemoModel{Delay: demoDelay}, nil
	}
	return nil, fmt.Errorf("model %q is not available in this build: only %q (the offline demo) is; leave REPLYFLOW_MODEL empty to use it", name, DemoModelName)
}

// DemoModel answers offline and deterministically, so replyflow works on a
// laptop with no model configured and tests have a stable reply.
type DemoModel struct {
	Delay time.Duration
}

// Name implements Model.
func (DemoModel) Name() string { return DemoModelName }

// Reply echoes the turn's text back with a hint that a real model can be set.
func (m DemoModel) Reply(ctx context.Context, req pipeline.TurnRequest) (string, error) {
	if m.Delay > 0 {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(m.Delay):
		}
	}
	return fmt.Sprintf("You said: %s\n\n(demo model: set REPLYFLOW_MODEL to talk to a real one)", strings.TrimSpace(req.Text)), nil
}
