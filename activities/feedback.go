package activities

import (
	"context"
	"fmt"
	"strings"

	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/pipeline"
)

// RecordFeedback stores a user's reaction on a message, resolved through
// the message ID map to the bot's internal message; a message the map does
// not know (sent before the map existed, or not by the bot) is kept as
// "<channel>:<chat>:<message>" with the unresolved flag. Redelivered events
// are stored once.
func (a *Activities) RecordFeedback(ctx context.Context, f pipeline.Feedback) error {
	if a.Store == nil {
		return nil
	}
	sessionID := f.Session().WorkflowID()
	internal, found, err := a.Store.InternalID(ctx, sessionID, f.MessageID)
	if err != nil {
		return fmt.Errorf("resolve the message of feedback %s in %s: %w", f.EventID, sessionID, err)
	}
	event := store.Feedback{
		EventID:   f.EventID,
		SessionID: sessionID,
		MessageID: internal,
		SenderID:  f.SenderID,
		Emoji:     strings.Join(f.Emoji, ""),
		CreatedAt: f.At,
	}
	if !found {
		event.MessageID, event.Unresolved = f.UnresolvedID(), true
	}
	return a.Store.AddFeedback(ctx, event)
}
