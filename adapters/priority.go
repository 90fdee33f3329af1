package adapters

import (
	"context"
	"errors"
	"time"
)

// Priority orders a chat's outbound calls when they compete for its
// delivery budget (each adapter keeps one per chat, see
// adapters/internal/budget): what the user waits for goes first, what
// only shows progress goes last and is the first given up.
type Priority int

const (
	// PriorityFinal: a reply's chunks and the edit that turns a preview
	// into the answer, proposals and their decided edits, command
	// answers, files. The default of a context that names none. Never
	// dropped: it waits its turn, or fails RateLimited for the activity
	// to retry.
	PriorityFinal Priority = iota
	// PriorityProgress: block messages of a streamed answer and reaction
	// states. They wait behind finals, and are never dropped here.
	PriorityProgress
	// PriorityPreview: a streaming preview's messages and edits, and
	// typing. They go only when the chat's budget has room to spare
	// beyond what a final would need now; otherwise they are not sent
	// and the call answers ErrSkipped (the next one carries newer text).
	PriorityPreview
)

func (p Priority) String() string {
	switch p {
	case PriorityFinal:
		return "final"
	case PriorityProgress:
		return "progress"
	default:
		return "preview"
	}
}

type priorityKey struct{}

// WithPriority marks the outbound calls made with ctx as of priority p.
func WithPriority(ctx context.Context, p Priority) context.Context {
	return context.WithValue(ctx, priorityKey{}, p)
}

// PriorityOf is what WithPriority set on ctx, PriorityFinal when nothing.
func PriorityOf(ctx context.Context) Priority {
	if p, ok := ctx.Value(priorityKey{}).(Priority); ok {
		return p
	}
	return PriorityFinal
}

// ErrSkipped is what an outbound call of PriorityPreview answers when it
// was not made: the chat's budget had no room to spare, or the chat is
// waiting out a platform's retry-after. Nothing reached the platform; a
// later call with newer text is the retry.
var ErrSkipped = errors.New("not sent: the chat's delivery budget keeps its room for replies (a preview is skipped, the next one carries newer text)")

// Skipped says whether err is (or wraps) ErrSkipped.
func Skipped(err error) bool { return errors.Is(err, ErrSkipped) }

type sendMarginKey struct{}

// WithSendMargin marks a call that must not start with less than margin
// of its context's time left: a send, which a deadline that cuts it
// after the platform took it would make the retry send again. The
// delivery budget refuses at once a wait that would leave less.
func WithSendMargin(ctx context.Context, margin time.Duration) context.Context {
	return context.WithValue(ctx, sendMarginKey{}, margin)
}

// SendMargin is what WithSendMargin set; zero for any other call, which
// may wait in the budget up to its deadline.
func SendMargin(ctx context.Context) time.Duration {
	m, _ := ctx.Value(sendMarginKey{}).(time.Duration)
	return m
}
