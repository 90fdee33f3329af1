// Package adapters defines the contract every platform adapter fulfils, and
// its subpackages (one per platform) are the only code in replyflow that
// speaks a platform's protocol or imports its SDK.
//
// Inbound, an adapter turns a platform event into a pipeline.Inbound and hands
// it to a Sink; it acknowledges the platform only after the Sink returned
// nil, which means Temporal durably accepted the message. Outbound, an
// adapter sends reply chunks, sets reactions and shows typing, and returns
// errors classified as rate limited, transient or permanent so that the
// activities can turn them into the right Temporal retry behaviour.
//
// Each platform's package also has a Platform type (see Platform in
// platform.go): its settings, and how the gateway and the worker start it;
// package gateway lists them.
//
// This package must not import Temporal or any platform SDK: it is the seam
// between them.
package adapters

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/replyflow/replyflow/pipeline"
)

// Sink is where an adapter hands a normalized inbound message. A nil error
// means the message is durably accepted and the platform may be acked.
type Sink interface {
	Accept(ctx context.Context, in pipeline.Inbound) error
}

// FeedbackSink takes users' reactions on messages, for platforms that report
// them. A nil error means the event is durably accepted.
type FeedbackSink interface {
	Feedback(ctx context.Context, f pipeline.Feedback) error
}

// Outbound is what the worker's activities ask of a platform. Every method
// must be safe to call again with the same arguments: Send with the same
// IdempotencyKey, SetReaction with the same state.
type Outbound interface {
	// Send delivers one reply chunk and returns the platform's message ID.
	Send(ctx context.Context, d pipeline.Delivery) (string, error)
	// SetReaction replaces the bot's reaction on a user message;
	// pipeline.ReactionNone clears it.
	SetReaction(ctx context.Context, r pipeline.ReactionChange) error
	// Typing shows the typing indicator once; callers refresh it.
	Typing(ctx context.Context, session pipeline.SessionKey, threadID string) error
	// Edit replaces the text and buttons of a message the bot sent.
	Edit(ctx context.Context, e pipeline.Edit) error
}

// ErrorKind says whether retrying a failed platform call can help.
type ErrorKind int

const (
	// Transient failures (network errors, 5xx) may succeed on retry.
	Transient ErrorKind = iota
	// RateLimited failures succeed after RetryAfter.
	RateLimited
	// Permanent failures (bad request, forbidden, bad token) will not
	// succeed on retry; a person must act.
	Permanent
)

func (k ErrorKind) String() string {
	switch k {
	case RateLimited:
		return "RateLimited"
	case Permanent:
		return "Permanent"
	default:
		return "Transient"
	}
}

// Error is a classified platform failure.
type Error struct {
	Kind       ErrorKind
	RetryAfter time.Duration
	Op         string
	Err        error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%s: %s failure", e.Op, e.Kind)
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Classify returns the kind of err; errors an adapter did not classify are
// treated as transient, so the retry policy, not a guess, gives up on them.
func Classify(err error) (ErrorKind, time.Duration) {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind, e.RetryAfter
	}
	return Transient, 0
}

// RateLimitedError is what a Sink returns for an event it dropped on
// purpose, without handing it to Temporal, because its sender or chat
// sent more than the gateway's inbound limits allow (package gateway's
// Limiter). Nothing is queued. An adapter treats it as handled, not as
// a failure: it acks its platform (a redelivery would only be refused
// again, and a retry loop is what a flood wants) and answers a button
// press. The sender hears of it once per window: the web chat answers
// 429 with Retry-After, the other platforms get a notice through their
// Serving.Notify.
type RateLimitedError struct {
	// Limit names the limit that refused: sender, chat or new-sessions.
	Limit string
	// RetryAfter is how long until the limit takes the next message.
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("dropped by the gateway's inbound %s rate limit (not handed to Temporal); the limit takes a message again in %s",
		e.Limit, e.RetryAfter.Round(time.Millisecond))
}

// AsRateLimited is err's RateLimitedError, if it is (or wraps) one.
func AsRateLimited(err error) (*RateLimitedError, bool) {
	var e *RateLimitedError
	ok := errors.As(err, &e)
	return e, ok
}

// SlowDownNotice is what a rate-limited sender is told, once per window.
const SlowDownNotice = "⏳ You're sending messages faster than I can read them; I skipped some. Try again in a minute."

// File is a document to send: /export's transcript.
type File struct {
	Name        string
	ContentType string
	Data        []byte
}

// FileSender is an Outbound that can send a document as a file, under
// d's reply and thread, with d.Text as its caption. It returns the
// platform's message ID. An Outbound that is no FileSender gets the
// document as chunked text replies. One that takes less than 1 MiB says
// how much with a method MaxFileBytes() int, and the document is cut to
// it (the oldest messages go first).
type FileSender interface {
	SendFile(ctx context.Context, d pipeline.Delivery, f File) (string, error)
}

// VoiceSender is an Outbound that can send a spoken reply (Ogg/Opus
// audio in v.Data): as a voice note where the platform has them, else as
// an audio file. d is the reply's last chunk under the voice's own
// idempotency key, in its thread; the voice has no caption (the text went
// out as its own message). It returns the platform's message (or file)
// ID. An Outbound that is no VoiceSender gets no voice replies.
type VoiceSender interface {
	SendVoice(ctx context.Context, d pipeline.Delivery, v File) (string, error)
}

// VoiceFileName is the name a spoken reply is sent under where it is a
// file.
const VoiceFileName = "reply.ogg"
