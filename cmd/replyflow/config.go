package main

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"time"

	"github.com/kelseyhightower/envconfig"
	"go.temporal.io/sdk/interceptor"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/gateway"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workers/telemetry"
)

// Config is every REPLYFLOW_ variable. docs/configuration.md's table
// lists them with their defaults; keep the two in step. The Temporal
// connection is not here: it is read the way every Temporal tool reads it
// (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, profiles...), see dialTemporal.
type Config struct {
	TaskQueue      string   `envconfig:"TASK_QUEUE" default:"replyflow"`
	Model          string   `envconfig:"MODEL"`
	ModelFallbacks []string `envconfig:"MODEL_FALLBACKS"`
	// ModelAllow are the models besides the chain that anyone may pick
	// with /model; owners may pick any.
	ModelAllow []string `envconfig:"MODEL_ALLOW"`
	// MemberSettings open chat settings to everyone: by default only
	// owners raise /think, /verbose, /usage and /queue.
	MemberSettings []string `envconfig:"MEMBER_SETTINGS"`
	MaxTokens      int64    `envconfig:"MAX_TOKENS" default:"1024"`
	// SystemPromptFile is the persona every turn starts with.
	SystemPromptFile string `envconfig:"SYSTEM_PROMPT_FILE"`
	ContextTokens    int    `envconfig:"CONTEXT_TOKENS" default:"8000"`
	ToolsFile        string `envconfig:"TOOLS_FILE"`
	// MCPFile declares the MCP servers whose tools the model may call.
	MCPFile string `envconfig:"MCP_FILE"`
	// HeartbeatFile is the checklist a heartbeat turn looks at; without
	// one (or with an empty one) heartbeat ticks are skipped.
	HeartbeatFile string `envconfig:"HEARTBEAT_FILE"`
	// AllowFrom lets senders talk to the agent: "provider:id" entries, or "*".
	AllowFrom           []string          `envconfig:"ALLOW_FROM" default:"*"`
	Activation          string            `envconfig:"ACTIVATION" default:"smart"`
	ActivationByChannel map[string]string `envconfig:"ACTIVATION_BY_CHANNEL"`
	Aliases             []string          `envconfig:"ALIASES"`
	// SessionScope is what one session is in a group chat: shared (the
	// chat) or per-sender; SessionScopeByChannel overrides it per channel.
	SessionScope          string            `envconfig:"SESSION_SCOPE" default:"shared"`
	SessionScopeByChannel map[string]string `envconfig:"SESSION_SCOPE_BY_CHANNEL"`
	// ResetWords are whole messages that start a new transcript as /new
	// does; ReplyPrefix goes in front of every reply ("[{model}] ").
	ResetWords     []string      `envconfig:"RESET_WORDS"`
	ReplyPrefix    string        `envconfig:"REPLY_PREFIX"`
	ObservedMaxAge time.Duration `envconfig:"OBSERVED_MAX_AGE" default:"6h"`
	GateModel      string        `envconfig:"GATE_MODEL"`
	GateTimeout    time.Duration `envconfig:"GATE_TIMEOUT" default:"2500ms"`
	// Owners may decide proposals: "provider:id" entries, or "*".
	Owners []string `envconfig:"OWNERS"`
	// ClaimTTL is how long a claim code printed at a start without owners
	// stays valid.
	ClaimTTL time.Duration `envconfig:"CLAIM_TTL" default:"1h"`
	// RequesterMayDecide lets the person whose message led to a proposal
	// decide it. It is off by default: on, anyone who can message the bot
	// runs any requires_approval tool by asking and pressing Approve.
	RequesterMayDecide bool          `envconfig:"REQUESTER_MAY_DECIDE" default:"false"`
	ProposalTTL        time.Duration `envconfig:"PROPOSAL_TTL" default:"24h"`
	MaxSteps           int           `envconfig:"MAX_STEPS" default:"8"`
	Timezone           string        `envconfig:"TIMEZONE" default:"UTC"`
	// StoreDSN is a SQLite file path or a postgres:// URL.
	StoreDSN string `envconfig:"STORE_DSN" default:".replyflow/replyflow.db"`
	// Media: the gateway records the files of users' messages in the
	// store and the worker shows them to the model (activities.Media):
	// images up to MediaMaxBytes to the models that take them
	// (ImageModels, else models.SeesImages' families), PDFs to the ones
	// that read them (PDFModels, else models.ReadsPDFs' families), text
	// files inline, voice notes transcribed with TranscribeModel (""
	// leaves them lines of text).
	Media         bool  `envconfig:"MEDIA" default:"false"`
	MediaMaxBytes int64 `envconfig:"MEDIA_MAX_BYTES" default:"5242880"`
	// MediaConcurrent bounds the turns of a worker that hold files'
	// bytes at once; the others wait for a slot.
	MediaConcurrent int      `envconfig:"MEDIA_CONCURRENT" default:"8"`
	TranscribeModel string   `envconfig:"TRANSCRIBE_MODEL" default:"gpt-4o-mini-transcribe"`
	ImageModels     []string `envconfig:"IMAGE_MODELS"`
	PDFModels       []string `envconfig:"PDF_MODELS"`
	// VoiceReplies is whether a chat nobody switched with /voice gets its
	// replies also spoken (activities.Voice), with OpenAI's speech model
	// VoiceModel in the voice VoiceName; an empty VoiceModel turns voice
	// replies off everywhere.
	VoiceReplies bool   `envconfig:"VOICE_REPLIES" default:"false"`
	VoiceModel   string `envconfig:"VOICE_MODEL" default:"gpt-4o-mini-tts"`
	VoiceName    string `envconfig:"VOICE_NAME" default:"alloy"`
	// MediaRetention is how long the store keeps a file's bytes or
	// transcript (0: as long as the file's row, the tool results'
	// retention); MediaChatFiles and MediaChatBytes bound them per chat
	// (store.MediaLimits).
	MediaRetention time.Duration `envconfig:"MEDIA_RETENTION" default:"0"`
	MediaChatFiles int           `envconfig:"MEDIA_CHAT_FILES" default:"50"`
	MediaChatBytes int64         `envconfig:"MEDIA_CHAT_BYTES" default:"104857600"`

	// DeliveryRetention, TranscriptRetention and FeedbackRetention are how
	// long the store keeps the delivery ledger, a transcript after the
	// session left it, and reaction feedback (store.Retention). Tool
	// results are kept as long as a turn may read them, from ProposalTTL
	// and MaxSteps (store.ToolResultsRetention).
	DeliveryRetention   time.Duration `envconfig:"DELIVERY_RETENTION" default:"720h"`
	TranscriptRetention time.Duration `envconfig:"TRANSCRIPT_RETENTION" default:"2160h"`
	FeedbackRetention   time.Duration `envconfig:"FEEDBACK_RETENTION" default:"2160h"`

	// Links: the worker reads the pages users link to and gives their
	// text to the model as untrusted content (activities.Links,
	// config_links.go), from public addresses only.
	Links         bool          `envconfig:"LINKS" default:"false"`
	LinksMax      int           `envconfig:"LINKS_MAX" default:"3"`
	LinksMaxBytes int64         `envconfig:"LINKS_MAX_BYTES" default:"1048576"`
	LinksMaxText  int           `envconfig:"LINKS_MAX_TEXT" default:"8192"`
	LinksTimeout  time.Duration `envconfig:"LINKS_TIMEOUT" default:"10s"`

	// Budgets per budget-day and breakers of model calls (config_spend.go,
	// activities.Spend); zero turns one off.
	BudgetChatTokens       int64         `envconfig:"BUDGET_CHAT_TOKENS" default:"1000000"`
	BudgetSenderTokens     int64         `envconfig:"BUDGET_SENDER_TOKENS" default:"500000"`
	BudgetDeploymentTokens int64         `envconfig:"BUDGET_DEPLOYMENT_TOKENS" default:"0"`
	BudgetChatUSD          float64       `envconfig:"BUDGET_CHAT_USD" default:"0"`
	BudgetSenderUSD        float64       `envconfig:"BUDGET_SENDER_USD" default:"0"`
	BudgetDeploymentUSD    float64       `envconfig:"BUDGET_DEPLOYMENT_USD" default:"0"`
	BudgetResetHour        int           `envconfig:"BUDGET_RESET_HOUR" default:"0"`
	BudgetTimezone         string        `envconfig:"BUDGET_TIMEZONE"`
	BudgetRetention        time.Duration `envconfig:"BUDGET_RETENTION" default:"720h"`
	// ModelPrices are "provider/model=input:output" entries, US dollars
	// per million tokens, for providers that report no cost.
	ModelPrices                []string      `envconfig:"MODEL_PRICES"`
	BreakerRepeatCalls         int           `envconfig:"BREAKER_REPEAT_CALLS" default:"3"`
	BreakerMaxSteps            int           `envconfig:"BREAKER_MAX_STEPS" default:"20"`
	BreakerHeartbeatSame       int           `envconfig:"BREAKER_HEARTBEAT_SAME" default:"5"`
	BreakerHeartbeatBackoff    time.Duration `envconfig:"BREAKER_HEARTBEAT_BACKOFF" default:"30m"`
	BreakerHeartbeatBackoffMax time.Duration `envconfig:"BREAKER_HEARTBEAT_BACKOFF_MAX" default:"6h"`
	BreakerFailures            int           `envconfig:"BREAKER_FAILURES" default:"3"`
	BreakerCooloff             time.Duration `envconfig:"BREAKER_COOLOFF" default:"15m"`

	ReactionClearDelay time.Duration `envconfig:"REACTION_CLEAR_DELAY" default:"60s"`
	ErrorClearDelay    time.Duration `envconfig:"ERROR_CLEAR_DELAY" default:"10m"`
	SessionIdleTTL     time.Duration `envconfig:"SESSION_IDLE_TTL" default:"24h"`
	ChunkLimit         int           `envconfig:"CHUNK_LIMIT" default:"0"`
	TurnTimeout        time.Duration `envconfig:"TURN_TIMEOUT" default:"5m"`
	// StaleAfter: a reply to a message sent this long before it starts
	// with a line saying which message it answers and how late; 0 never.
	StaleAfter time.Duration `envconfig:"STALE_AFTER" default:"15m"`
	// TurnHeartbeatTimeout is how long a model attempt's worker may stay
	// silent before the attempt is taken as lost and asked again on
	// another worker: what a crash adds to the reply's wait. It does not
	// bound the model: the attempt heartbeats every third of it for as long
	// as the model works (activities' keepAlive), and every heartbeat
	// reaches the server (workers.HeartbeatThrottle), so a model that takes
	// minutes is still one call, and a live worker is taken for lost only
	// when three heartbeats in a row do not get through.
	TurnHeartbeatTimeout time.Duration `envconfig:"TURN_HEARTBEAT_TIMEOUT" default:"2s"`
	// ReleaseSessionsOnStart: a starting worker sends the task queue's
	// open sessions to the shared queue, away from earlier workers' sticky
	// queues, so a killed worker's sessions move on at once. Each release
	// costs the server a write, and a session a live worker held replays
	// its history once: a deployment that rolls many workers at a time
	// may turn it off and wait the sticky timeout (1 s) after a crash.
	ReleaseSessionsOnStart bool          `envconfig:"RELEASE_SESSIONS_ON_START" default:"true"`
	TurnAttempts           int           `envconfig:"TURN_ATTEMPTS" default:"3"`
	DeliveryTimeout        time.Duration `envconfig:"DELIVERY_TIMEOUT" default:"30s"`
	DeliveryDeadline       time.Duration `envconfig:"DELIVERY_DEADLINE" default:"10m"`
	MaxHistoryEvents       int           `envconfig:"MAX_HISTORY_EVENTS" default:"10000"`
	WorkflowCacheSize      int           `envconfig:"WORKFLOW_CACHE_SIZE" default:"2000"`
	ShutdownGrace          time.Duration `envconfig:"SHUTDOWN_GRACE" default:"30s"`
	// WorkerVersioning, DeploymentName, BuildID and Promote place the
	// worker in a Worker Deployment (versioning.go, workers.Deployment).
	WorkerVersioning bool                     `envconfig:"WORKER_VERSIONING" default:"true"`
	DeploymentName   string                   `envconfig:"DEPLOYMENT_NAME" default:"replyflow"`
	BuildID          string                   `envconfig:"BUILD_ID"`
	Promote          string                   `envconfig:"PROMOTE" default:"first"`
	TypingInterval   time.Duration            `envconfig:"TYPING_INTERVAL" default:"4s"`
	TypingByChannel  map[string]time.Duration `envconfig:"TYPING_INTERVAL_BY_CHANNEL"`
	ReactionCoalesce time.Duration            `envconfig:"REACTION_COALESCE" default:"700ms"`
	// Stream is how answers show while the model writes them: preview
	// (one message, edited as it grows), blocks (paragraphs as their own
	// messages) or off. StreamByChannel overrides it per channel.
	Stream          string            `envconfig:"STREAM" default:"preview"`
	StreamByChannel map[string]string `envconfig:"STREAM_BY_CHANNEL"`
	// StreamPreviewAfter is how long a stream runs before its preview
	// appears: an answer done sooner goes out as one message.
	StreamPreviewAfter time.Duration `envconfig:"STREAM_PREVIEW_AFTER" default:"1s"`
	DemoModelDelay     time.Duration `envconfig:"DEMO_MODEL_DELAY" default:"1s"`

	Debounce           time.Duration            `envconfig:"DEBOUNCE" default:"1s"`
	DebounceByChannel  map[string]time.Duration `envconfig:"DEBOUNCE_BY_CHANNEL"`
	DebounceMaxWait    time.Duration            `envconfig:"DEBOUNCE_MAX_WAIT" default:"5s"`
	QueueMode          string                   `envconfig:"QUEUE_MODE" default:"followup"`
	QueueModeByChannel map[string]string        `envconfig:"QUEUE_MODE_BY_CHANNEL"`
	QueueCap           int                      `envconfig:"QUEUE_CAP" default:"20"`
	QueueDrop          string                   `envconfig:"QUEUE_DROP" default:"summarize"`

	// WebchatAddr is the gateway's HTTP address: the web chat, webhooks
	// and /healthz.
	WebchatAddr string `envconfig:"WEBCHAT_ADDR" default:"127.0.0.1:8080"`
	// WebhookAddr, when set, is a second address that serves only the
	// platforms' webhooks (Telegram's, Slack's Events API) and /healthz,
	// so a webhook exposed to the internet exposes nothing else.
	WebhookAddr string `envconfig:"WEBHOOK_ADDR"`
	// MetricsAddr, when set, serves /metrics (Prometheus), /healthz and
	// /readyz for the worker and the gateway (each process its own).
	MetricsAddr string `envconfig:"METRICS_ADDR"`
	// tel is the process's telemetry when MetricsAddr is set (or a test
	// sets it): Temporal clients dialled with this Config report to it.
	tel *telemetry.Telemetry
	// tracing is the SDK's tracing interceptor when OTEL_EXPORTER_OTLP_*
	// name an endpoint: Temporal clients dialled with this Config use it.
	tracing interceptor.Interceptor
	// HTTPTimeout bounds how long a request may take to arrive and its
	// answer to be written (event streams bound each write instead).
	HTTPTimeout time.Duration `envconfig:"HTTP_TIMEOUT" default:"30s"`
	// RateSender, RateChat, RateNewSessions (per sender) and
	// RateNewSessionsGlobal (the ceiling for all strangers) are the
	// gateway's inbound limits, <burst>@<interval> or off
	// (gateway.ParseRate; the defaults are gateway.DefaultLimits, which
	// says why).
	RateSender            string `envconfig:"RATE_SENDER" default:"20@2s"`
	RateChat              string `envconfig:"RATE_CHAT" default:"40@1s"`
	RateNewSessions       string `envconfig:"RATE_NEW_SESSIONS" default:"10@6s"`
	RateNewSessionsGlobal string `envconfig:"RATE_NEW_SESSIONS_GLOBAL" default:"300@1s"`

	// Platforms are the registered platforms (package gateway), each
	// read from its own REPLYFLOW_ variables.
	Platforms []adapters.Platform `ignored:"true"`

	// Payload encryption (package workers/codec; codec.go wires it).
	// CodecKeys are "id:base64key" entries, the first encrypts: key
	// material, never log it. CodecToken is the codec server's bearer
	// token: never log it either.
	CodecKeys       string   `envconfig:"CODEC_KEYS"`
	CodecCompress   bool     `envconfig:"CODEC_COMPRESS" default:"false"`
	CodecServerAddr string   `envconfig:"CODEC_SERVER_ADDR" default:"127.0.0.1:8089"`
	CodecUIOrigins  []string `envconfig:"CODEC_UI_ORIGINS"`
	CodecToken      string   `envconfig:"CODEC_TOKEN"`

	LogLevel  string `envconfig:"LOG_LEVEL" default:"info"`
	LogFormat string `envconfig:"LOG_FORMAT" default:"text"`

	DevDir         string `envconfig:"DEV_DIR" default:".replyflow"`
	DevTemporalCLI string `envconfig:"DEV_TEMPORAL_CLI" default:"bin/temporal"`
	DevTemporalIP  string `envconfig:"DEV_TEMPORAL_IP" default:"127.0.0.1"`
	DevPort        int    `envconfig:"DEV_TEMPORAL_PORT" default:"7233"`
	DevUIPort      int    `envconfig:"DEV_UI_PORT" default:"8233"`
	DevCodecPort   int    `envconfig:"DEV_CODEC_PORT" default:"8234"`
}

// loadConfig reads REPLYFLOW_* from the environment and checks it.
func loadConfig() (Config, error) {
	if _, set := os.LookupEnv("REPLYFLOW_WORKER_STOP_TIMEOUT"); set {
		// A renamed variable would silently fall back to its default.
		return Config{}, errors.New("REPLYFLOW_WORKER_STOP_TIMEOUT is now REPLYFLOW_SHUTDOWN_GRACE (it bounds the gateway's stop too): rename it")
	}
	c, err := readConfig("replyflow")
	if err != nil {
		return c, err
	}
	return c, c.validate()
}

// readConfig reads prefix_* variables into the Config and every
// registered platform's settings.
func readConfig(prefix string) (Config, error) {
	var c Config
	if err := envconfig.Process(prefix, &c); err != nil {
		return c, err
	}
	c.Platforms = gateway.Platforms()
	for _, p := range c.Platforms {
		if err := envconfig.Process(prefix, p); err != nil {
			return c, fmt.Errorf("%s settings: %w", p.Channel(), err)
		}
	}
	return c, nil
}

// withOwnPlatforms is c with copies of its platforms' settings, to change
// without changing them for whoever else holds c.
func (c Config) withOwnPlatforms() Config {
	own := make([]adapters.Platform, len(c.Platforms))
	for i, p := range c.Platforms {
		v := reflect.ValueOf(p).Elem()
		cp := reflect.New(v.Type())
		cp.Elem().Set(v)
		own[i] = cp.Interface().(adapters.Platform)
	}
	c.Platforms = own
	return c
}

// minTurnHeartbeatTimeout is the shortest REPLYFLOW_TURN_HEARTBEAT_TIMEOUT:
// below it, a worker busy for a moment (a long pause of its garbage
// collector, a host short of CPU) would have its model attempts taken
// for lost and asked twice.
const minTurnHeartbeatTimeout = time.Second

func (c Config) validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.ReactionClearDelay >= 0 && c.ReactionClearDelay <= 10*time.Minute,
		"REPLYFLOW_REACTION_CLEAR_DELAY must be between 0 and 10m, got %s", c.ReactionClearDelay)
	check(c.ErrorClearDelay >= 0, "REPLYFLOW_ERROR_CLEAR_DELAY must not be negative")
	check(c.SessionIdleTTL >= time.Second, "REPLYFLOW_SESSION_IDLE_TTL must be at least 1s, got %s", c.SessionIdleTTL)
	check(c.ChunkLimit == 0 || c.ChunkLimit >= 16, "REPLYFLOW_CHUNK_LIMIT must be 0 (each channel's own limit) or at least 16, got %d", c.ChunkLimit)
	check(c.TurnTimeout > 0, "REPLYFLOW_TURN_TIMEOUT must be positive")
	check(c.TurnHeartbeatTimeout >= minTurnHeartbeatTimeout, "REPLYFLOW_TURN_HEARTBEAT_TIMEOUT must be at least %s, got %s", minTurnHeartbeatTimeout, c.TurnHeartbeatTimeout)
	check(c.TurnAttempts >= 1, "REPLYFLOW_TURN_ATTEMPTS must be at least 1")
	check(c.DeliveryTimeout > 0, "REPLYFLOW_DELIVERY_TIMEOUT must be positive")
	check(c.HTTPTimeout > 0, "REPLYFLOW_HTTP_TIMEOUT must be positive, got %s", c.HTTPTimeout)
	check(c.DeliveryDeadline >= c.DeliveryTimeout, "REPLYFLOW_DELIVERY_DEADLINE must be at least REPLYFLOW_DELIVERY_TIMEOUT")
	check(c.MaxHistoryEvents >= 0, "REPLYFLOW_MAX_HISTORY_EVENTS must not be negative")
	check(c.WorkflowCacheSize >= 1, "REPLYFLOW_WORKFLOW_CACHE_SIZE must be at least 1, got %d", c.WorkflowCacheSize)
	check(c.ShutdownGrace >= 0, "REPLYFLOW_SHUTDOWN_GRACE must not be negative, got %s", c.ShutdownGrace)
	if err := c.checkDeployment(); err != nil {
		errs = append(errs, err)
	}
	check(c.TypingInterval >= 0, "REPLYFLOW_TYPING_INTERVAL must not be negative")
	for _, m := range append([]string{c.Stream}, mapValues(c.StreamByChannel)...) {
		if _, err := pipeline.ParseStreamMode(m); err != nil {
			errs = append(errs, fmt.Errorf("REPLYFLOW_STREAM(_BY_CHANNEL): %w", err))
		}
	}
	check(c.StreamPreviewAfter >= 0, "REPLYFLOW_STREAM_PREVIEW_AFTER must not be negative")
	check(c.LogFormat == "text" || c.LogFormat == "json", "REPLYFLOW_LOG_FORMAT must be text or json, got %q", c.LogFormat)
	check(c.StaleAfter >= 0, "REPLYFLOW_STALE_AFTER must be 0 (off) or a duration such as 15m, got %s", c.StaleAfter)
	check(c.ReactionCoalesce >= 0 && c.ReactionCoalesce <= 10*time.Second, "REPLYFLOW_REACTION_COALESCE must be between 0 and 10s, got %s", c.ReactionCoalesce)
	check(c.DemoModelDelay >= 0, "REPLYFLOW_DEMO_MODEL_DELAY must not be negative")
	check(c.MaxTokens >= 1, "REPLYFLOW_MAX_TOKENS must be at least 1")
	for _, a := range append([]string{c.Activation}, mapValues(c.ActivationByChannel)...) {
		check(slices.Contains([]string{pipeline.ActivationMention, pipeline.ActivationSmart, pipeline.ActivationGated, pipeline.ActivationAlways}, a),
			"REPLYFLOW_ACTIVATION(_BY_CHANNEL) must be mention, smart, gated or always, got %q", a)
	}
	if c.GateModel != "" {
		if _, _, err := pipeline.ParseModelName(c.GateModel); err != nil {
			errs = append(errs, fmt.Errorf("REPLYFLOW_GATE_MODEL: %w", err))
		}
	}
	check(c.GateTimeout > 0, "REPLYFLOW_GATE_TIMEOUT must be positive")
	check(c.ClaimTTL > 0, "REPLYFLOW_CLAIM_TTL must be positive (how long a claim code printed at a start without owners stays valid)")
	errs = append(errs, c.validateSessionSettings()...)
	errs = append(errs, c.validateSpend()...)
	errs = append(errs, c.validateLinks()...)
	check(c.ProposalTTL >= time.Minute, "REPLYFLOW_PROPOSAL_TTL must be at least 1m, got %s", c.ProposalTTL)
	// The ledger is what keeps a retried chunk from being sent twice, a
	// parked one retried by hand included: a day at least.
	check(c.MediaConcurrent >= 1 && c.MediaConcurrent <= 1000, "REPLYFLOW_MEDIA_CONCURRENT must be between 1 and 1000 (the turns of a worker that hold files at once), got %d", c.MediaConcurrent)
	check(c.MediaMaxBytes > 0 && c.MediaMaxBytes <= 20<<20, "REPLYFLOW_MEDIA_MAX_BYTES must be between 1 and 20971520 (20 MiB, the largest image a provider takes), got %d", c.MediaMaxBytes)
	check(c.MediaRetention == 0 || c.MediaRetention >= time.Hour, "REPLYFLOW_MEDIA_RETENTION must be 0 (as long as the tool results) or at least 1h, got %s", c.MediaRetention)
	check(c.MediaChatFiles >= 1 && c.MediaChatFiles <= 10000, "REPLYFLOW_MEDIA_CHAT_FILES must be from 1 to 10000, got %d", c.MediaChatFiles)
	check(c.MediaChatBytes >= c.MediaMaxBytes*4/3+64, "REPLYFLOW_MEDIA_CHAT_BYTES must hold at least one file of REPLYFLOW_MEDIA_MAX_BYTES as stored (base64: %d bytes), got %d", c.MediaMaxBytes*4/3+64, c.MediaChatBytes)
	check(c.DeliveryRetention >= 24*time.Hour, "REPLYFLOW_DELIVERY_RETENTION must be at least 24h, got %s", c.DeliveryRetention)
	check(c.VoiceModel == "" || c.VoiceName != "", "REPLYFLOW_VOICE_NAME must name a voice (alloy, ash, coral, ...) while REPLYFLOW_VOICE_MODEL is set")
	check(!c.VoiceReplies || c.VoiceModel != "", "REPLYFLOW_VOICE_REPLIES=true needs REPLYFLOW_VOICE_MODEL (the speech model, e.g. gpt-4o-mini-tts)")
	check(c.TranscriptRetention >= time.Hour, "REPLYFLOW_TRANSCRIPT_RETENTION must be at least 1h, got %s", c.TranscriptRetention)
	check(c.FeedbackRetention >= time.Hour, "REPLYFLOW_FEEDBACK_RETENTION must be at least 1h, got %s", c.FeedbackRetention)
	check(c.MaxSteps >= 1 && c.MaxSteps <= 50, "REPLYFLOW_MAX_STEPS must be from 1 to 50, got %d", c.MaxSteps)
	check(c.ContextTokens >= 256, "REPLYFLOW_CONTEXT_TOKENS must be at least 256, got %d", c.ContextTokens)
	if _, err := time.LoadLocation(c.Timezone); err != nil {
		errs = append(errs, fmt.Errorf("REPLYFLOW_TIMEZONE: %w", err))
	}
	for _, m := range append(c.models(), c.ModelAllow...) {
		if _, _, err := pipeline.ParseModelName(m); err != nil {
			errs = append(errs, fmt.Errorf("REPLYFLOW_MODEL / REPLYFLOW_MODEL_FALLBACKS / REPLYFLOW_MODEL_ALLOW: %w", err))
		}
	}
	if err := pipeline.ParseMemberSettings(c.MemberSettings); err != nil {
		errs = append(errs, fmt.Errorf("REPLYFLOW_MEMBER_SETTINGS: %w", err))
	}
	check(c.QueueCap >= 1 && c.QueueCap <= pipeline.MaxQueueCap, "REPLYFLOW_QUEUE_CAP must be from 1 to %d, got %d", pipeline.MaxQueueCap, c.QueueCap)
	if _, err := pipeline.ParseDropPolicy(c.QueueDrop); err != nil {
		errs = append(errs, fmt.Errorf("REPLYFLOW_QUEUE_DROP: %w", err))
	}
	if _, err := pipeline.ParseQueueMode(c.QueueMode); err != nil {
		errs = append(errs, fmt.Errorf("REPLYFLOW_QUEUE_MODE: %w", err))
	}
	for _, channel := range sortedKeys(c.QueueModeByChannel) {
		if _, err := pipeline.ParseQueueMode(c.QueueModeByChannel[channel]); err != nil {
			errs = append(errs, fmt.Errorf("REPLYFLOW_QUEUE_MODE_BY_CHANNEL for %s: %w", channel, err))
		}
	}
	check(c.Debounce >= 0 && c.Debounce <= pipeline.MaxDebounce, "REPLYFLOW_DEBOUNCE must be between 0 and %s, got %s", pipeline.MaxDebounce, c.Debounce)
	check(c.DebounceMaxWait > 0 && c.DebounceMaxWait <= pipeline.MaxDebounce, "REPLYFLOW_DEBOUNCE_MAX_WAIT must be above 0 and at most %s, got %s", pipeline.MaxDebounce, c.DebounceMaxWait)
	for _, channel := range sortedKeys(c.DebounceByChannel) {
		d := c.DebounceByChannel[channel]
		check(d >= 0 && d <= pipeline.MaxDebounce, "REPLYFLOW_DEBOUNCE_BY_CHANNEL for %s must be between 0 and %s, got %s", channel, pipeline.MaxDebounce, d)
	}
	rates := c.rates()
	for _, name := range sortedKeys(rates) {
		if _, err := gateway.ParseRate(rates[name]); err != nil {
			errs = append(errs, fmt.Errorf("REPLYFLOW_%s: %w", name, err))
		}
	}
	errs = append(errs, c.validateCodec()...)
	errs = append(errs, gateway.Validate(c.Platforms)...)
	return errors.Join(errs...)
}

func (c Config) rates() map[string]string {
	return map[string]string{"RATE_SENDER": c.RateSender, "RATE_CHAT": c.RateChat, "RATE_NEW_SESSIONS": c.RateNewSessions,
		"RATE_NEW_SESSIONS_GLOBAL": c.RateNewSessionsGlobal}
}

// limits are the gateway's inbound limits (validate checked them).
func (c Config) limits() gateway.Limits {
	rate := func(s string) gateway.Rate { r, _ := gateway.ParseRate(s); return r }
	return gateway.Limits{
		Sender: rate(c.RateSender), Chat: rate(c.RateChat), NewSessions: rate(c.RateNewSessions),
		NewSessionsGlobal: rate(c.RateNewSessionsGlobal),
		AllowFrom:         c.AllowFrom, Owners: c.Owners,
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, k := range sortedKeys(m) {
		out = append(out, m[k])
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// channelSettings applies the per-channel chunk limit, queue mode and
// debounce.
func (c Config) channelSettings(key pipeline.SessionKey, s pipeline.Settings) pipeline.Settings {
	if s.ChunkLimit == 0 {
		s.ChunkLimit = c.chunker(key.Channel).ChunkLimit()
	}
	if mode, ok := c.QueueModeByChannel[key.Channel]; ok {
		s.Queue.Mode, _ = pipeline.ParseQueueMode(mode)
	}
	if a, ok := c.ActivationByChannel[key.Channel]; ok {
		s.Activation = a
	}
	if d, ok := c.DebounceByChannel[key.Channel]; ok {
		s.Queue.Debounce = pipeline.Duration(d)
	}
	return s
}

// chunker is how channel's platform cuts its messages;
// adapters.DefaultChunker for a channel no registered platform serves.
func (c Config) chunker(channel string) adapters.Chunker {
	for _, p := range c.Platforms {
		if p.Channel() == channel {
			return adapters.ChunkerOf(p)
		}
	}
	return adapters.DefaultChunker
}

// models is the fallback chain, primary first; the demo model when none is
// configured.
func (c Config) models() []string {
	primary := c.Model
	if primary == "" {
		primary = models.DemoName
	}
	return append([]string{primary}, c.ModelFallbacks...)
}

// settings are the defaults every session run loads.
func (c Config) settings() pipeline.Settings {
	return pipeline.Settings{
		Models:               c.models(),
		ReactionClearDelay:   pipeline.Duration(c.ReactionClearDelay),
		ErrorClearDelay:      pipeline.Duration(c.ErrorClearDelay),
		IdleTTL:              pipeline.Duration(c.SessionIdleTTL),
		ChunkLimit:           c.ChunkLimit,
		TurnTimeout:          pipeline.Duration(c.TurnTimeout),
		TurnHeartbeatTimeout: pipeline.Duration(c.TurnHeartbeatTimeout),
		TurnAttempts:         c.TurnAttempts,
		DeliveryTimeout:      pipeline.Duration(c.DeliveryTimeout),
		DeliveryDeadline:     pipeline.Duration(c.DeliveryDeadline),
		MaxHistoryEvents:     c.MaxHistoryEvents,
		MaxSteps:             c.MaxSteps,
		Owners:               c.Owners,
		AllowFrom:            c.AllowFrom,
		ModelAllow:           c.ModelAllow,
		MemberSettings:       c.MemberSettings,
		Activation:           c.Activation,
		Aliases:              c.Aliases,
		ObservedMaxAge:       pipeline.Duration(c.ObservedMaxAge),
		GateModel:            c.GateModel,
		GateTimeout:          pipeline.Duration(c.GateTimeout),
		RequesterMayDecide:   c.RequesterMayDecide,
		ProposalTTL:          pipeline.Duration(c.ProposalTTL),
		Queue:                c.queueDefaults(),
		DebounceMaxWait:      pipeline.Duration(c.DebounceMaxWait),
		ResetWords:           c.ResetWords,
		ReplyPrefix:          c.ReplyPrefix,
	}
}

// retention is what the worker's store keeps, and for how long.
func (c Config) retention() store.Retention {
	toolResults := store.ToolResultsRetention(c.ProposalTTL, c.MaxSteps)
	media := c.MediaRetention
	if media == 0 {
		media = toolResults // as long as the file's row
	}
	return store.Retention{
		ToolResults: toolResults,
		Deliveries:  c.DeliveryRetention,
		Transcripts: c.TranscriptRetention,
		Feedback:    c.FeedbackRetention,
		Spend:       c.BudgetRetention,
		// The web chat's log keeps the store's own retention: no setting.
		ChatLog: store.DefaultRetention().ChatLog,
		Media:   media,
	}
}

// mediaLimits are the store's per-chat bounds on the files' content.
func (c Config) mediaLimits() store.MediaLimits {
	return store.MediaLimits{ChatFiles: c.MediaChatFiles, ChatBytes: c.MediaChatBytes}
}

func (c Config) queueDefaults() pipeline.QueueSettings {
	mode, _ := pipeline.ParseQueueMode(c.QueueMode)
	drop, _ := pipeline.ParseDropPolicy(c.QueueDrop)
	return pipeline.QueueSettings{Mode: mode, Debounce: pipeline.Duration(c.Debounce), Cap: c.QueueCap, Drop: drop}
}

// streaming is the worker's stream settings (validated: a bad mode is
// refused at start).
func (c Config) streaming() activities.Streaming {
	s := activities.Streaming{Pacing: pipeline.PreviewPacing{FirstAfter: c.StreamPreviewAfter}}
	s.Mode, _ = pipeline.ParseStreamMode(c.Stream)
	for channel, m := range c.StreamByChannel {
		if s.ByChannel == nil {
			s.ByChannel = map[string]pipeline.StreamMode{}
		}
		s.ByChannel[channel], _ = pipeline.ParseStreamMode(m)
	}
	return s
}

// voice speaks the replies of the chats with voice replies; nil without
// REPLYFLOW_VOICE_MODEL.
func (c Config) voice() *activities.Voice {
	if c.VoiceModel == "" {
		return nil
	}
	return &activities.Voice{
		Speaker: models.NewOpenAISpeaker(c.VoiceModel, c.VoiceName),
		// Priced as REPLYFLOW_MODEL_PRICES names OpenAI's models.
		Model:   "openai/" + c.VoiceModel,
		Default: c.VoiceReplies,
	}
}

// media is how turns show the model the files users send; nil without
// REPLYFLOW_MEDIA.
func (c Config) media() *activities.Media {
	if !c.Media {
		return nil
	}
	m := &activities.Media{MaxBytes: c.MediaMaxBytes, Concurrent: c.MediaConcurrent}
	if c.TranscribeModel != "" {
		m.Transcriber, m.TranscribeModel = models.NewOpenAITranscriber(c.TranscribeModel), c.TranscribeModel
	}
	if len(c.ImageModels) > 0 {
		m.SeesImages = func(model string) bool { return slices.Contains(c.ImageModels, model) }
	}
	if len(c.PDFModels) > 0 {
		m.ReadsPDFs = func(model string) bool { return slices.Contains(c.PDFModels, model) }
	}
	return m
}
