package adapters

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/replyflow/replyflow/pipeline"
)

// Platform is one chat platform as the replyflow commands see it: its
// settings, its gateway side and its worker side. The value is its own
// settings: a pointer to an envconfig struct the commands fill from
// REPLYFLOW_* variables before anything else is called. Package gateway
// lists the registered platforms; it is defined here, beside Sink and
// Outbound, so that a platform's package implements it without importing
// the gateway.
type Platform interface {
	// Channel is the platform's name in session keys, settings and logs.
	Channel() string
	// Enabled says whether the settings turn the platform on.
	Enabled() bool
	// HowToEnable names what turns it on, for a gateway with none on.
	HowToEnable() string
	// Validate checks the settings (a disabled platform may skip them);
	// each error names its variable.
	Validate() []error
	// Summary is a line for the dev banner, "" for none.
	Summary() string
	// Serve starts the gateway side: routes on the gateway's mux and any
	// connection of its own in the background, until ctx is done. It must
	// not wait for the platform to answer: one platform being down holds
	// up no other.
	Serve(ctx context.Context, gw GatewaySide) (Serving, error)
	// Outbound is the worker side: what the activities deliver through.
	Outbound(w WorkerSide) (Outbound, error)
}

// TypingRefresher is a Platform whose typing indicator lasts a known
// time: the worker refreshes it at TypingInterval unless
// REPLYFLOW_TYPING_INTERVAL_BY_CHANNEL says otherwise.
type TypingRefresher interface {
	TypingInterval() time.Duration
}

// Chunker is a Platform that declares how its messages are cut: every
// registered platform is one, and ChunkerOf gives the rest
// DefaultChunker. Callers reach it through ChunkerOf, so none branches on
// a platform's name.
type Chunker interface {
	// ChunkLimit is the length of one message, in the units the platform
	// counts: a session's chunk limit when REPLYFLOW_CHUNK_LIMIT sets none.
	ChunkLimit() int
	// Chunk cuts a Markdown reply into messages, in order, each of which
	// fits limit once the platform's adapter renders it.
	Chunk(markdown string, limit int) []string
}

// ChunkerOf is how p cuts its messages: p itself when it is a Chunker,
// else DefaultChunker.
func ChunkerOf(p Platform) Chunker {
	if c, ok := p.(Chunker); ok {
		return c
	}
	return DefaultChunker
}

// DefaultChunker cuts with pipeline.Chunk at pipeline.DefaultChunkLimit:
// the rules of a platform that declares none, or of a channel no
// registered platform serves.
var DefaultChunker Chunker = markdownChunker{}

type markdownChunker struct{}

func (markdownChunker) ChunkLimit() int { return pipeline.DefaultChunkLimit }

func (markdownChunker) Chunk(markdown string, limit int) []string {
	return pipeline.Chunk(markdown, limit)
}

// GatewaySide is what the gateway lends a platform.
type GatewaySide struct {
	// Mux is the gateway's HTTP server (REPLYFLOW_WEBCHAT_ADDR); routes are
	// mounted before it starts.
	Mux *http.ServeMux
	// Webhooks is where a platform mounts the URLs the platform itself
	// calls (webhooks, event URLs): REPLYFLOW_WEBHOOK_ADDR's server, or
	// Mux when that is not set.
	Webhooks *http.ServeMux
	// Sink and Feedback hand events to Temporal (package gateway's Ingress).
	Sink     Sink
	Feedback FeedbackSink
	// Health takes the platform's connection state for GET /healthz.
	Health HealthReporter
	Logger *slog.Logger
	// WriteTimeout bounds a request's answer, or each write to an event
	// stream (REPLYFLOW_HTTP_TIMEOUT).
	WriteTimeout time.Duration
	// Sessions lists the running sessions, for a platform that does not
	// redeliver what a dead gateway missed (Discord) and must fetch it
	// from the platform's history; nil when the gateway cannot list them.
	Sessions SessionLister
	// ChatLog keeps the chats of a platform with no history of its own
	// (the web chat) in the store; nil when the gateway has no store.
	ChatLog ChatLog
	// Uploads keeps the files users upload to a platform with no file
	// store of its own (the web chat), each at most MaxFileBytes
	// (REPLYFLOW_MEDIA_MAX_BYTES); nil when files are off
	// (REPLYFLOW_MEDIA) and such a platform takes none.
	Uploads      UploadStore
	MaxFileBytes int64
}

// SessionLister finds the sessions that are running now.
type SessionLister interface {
	// OpenSessions are the running sessions of one channel ("discord").
	OpenSessions(ctx context.Context, channel string) ([]OpenSession, error)
}

// ClosedSessionLister also finds the sessions that ended lately: a
// conversation whose session ended (idle past its TTL) keeps, in their
// LastInboundAt, when it last took a message, which a catch-up reads on
// from.
type ClosedSessionLister interface {
	// ClosedSessions are the runs of one channel's sessions that closed
	// after since (ClosedAt set).
	ClosedSessions(ctx context.Context, channel string, since time.Time) ([]OpenSession, error)
}

// OpenSession is a session's run as visibility knows it: a running one,
// or one that closed (ClosedAt).
type OpenSession struct {
	Key pipeline.SessionKey
	// LastInboundAt is when the session last took a message; zero when
	// no worker ran it yet.
	LastInboundAt time.Time
	StartedAt     time.Time
	// ClosedAt is when the run closed; zero while it runs.
	ClosedAt time.Time
}

// WebhookMux is Webhooks, or Mux when no separate address is set.
func (g GatewaySide) WebhookMux() *http.ServeMux {
	if g.Webhooks != nil {
		return g.Webhooks
	}
	return g.Mux
}

// Serving is a platform's running gateway side.
type Serving struct {
	// Failed receives a failure no retry can fix (a wrong token), after
	// which the gateway stops; nil when none can happen.
	Failed <-chan error
	// Close runs as the gateway stops, before its HTTP server shuts down
	// (to end event streams that would hold it up); nil for nothing.
	Close func()
	// Notify sends text as a plain bot message in in's chat (and thread),
	// outside any session, with the client the gateway side holds: the
	// gateway's slow-down notice to a sender it rate-limited. Best
	// effort: the caller bounds ctx and logs a failure; it must never log
	// text. nil when the platform tells the sender another way (the web
	// chat's 429) or cannot.
	Notify func(ctx context.Context, in pipeline.Inbound, text string) error
}

// WorkerSide is what the worker lends a platform.
type WorkerSide struct {
	// IDs resolves internal message IDs to the platform's (the store).
	IDs    IDMap
	Logger *slog.Logger
	// Uploads reads the files users uploaded to a platform with no file
	// store of its own (the web chat) from the store; nil when the
	// worker has none.
	Uploads UploadReader
}

// IDMap resolves the bot's internal message IDs to the platform's; the
// store is the real one.
type IDMap interface {
	PlatformID(ctx context.Context, sessionID, internalID string) (string, bool, error)
}

// Connection states a platform's gateway side reports on GET /healthz.
const (
	StateUp         = "up"
	StateConnecting = "connecting"
	StateFailed     = "failed"
)

// Health is one platform's connection as GET /healthz shows it.
type Health struct {
	State string `json:"state"`
	// Error is the last failure while connecting; Attempts counts them,
	// and NextAttemptAt is when the next one starts.
	Error         string     `json:"error,omitempty"`
	Attempts      int        `json:"attempts,omitempty"`
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
}

// HealthReporter records the state of a platform's connection.
type HealthReporter interface {
	Report(channel string, h Health)
}
