package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fingerprint follows every setting a session run loads from the
// worker's configuration, ignores the rest, and shows none of them.
func TestSessionSettingsFingerprint(t *testing.T) {
	base := func() Config {
		cfg, err := readConfig("replyflow_test_unset")
		require.NoError(t, err)
		return cfg.withOwnPlatforms()
	}
	fingerprint := func(cfg Config) string {
		fp, err := cfg.sessionSettingsFingerprint()
		require.NoError(t, err)
		return fp
	}
	was := fingerprint(base())
	assert.Equal(t, was, fingerprint(base()), "the same configuration, the same fingerprint")

	for name, change := range map[string]func(*Config){
		"REPLYFLOW_MODEL":                  func(c *Config) { c.Model = "openai/gpt-newer" },
		"REPLYFLOW_MODEL_FALLBACKS":        func(c *Config) { c.ModelFallbacks = []string{"anthropic/claude-x"} },
		"REPLYFLOW_MODEL_ALLOW":            func(c *Config) { c.ModelAllow = []string{"openai/gpt-mini"} },
		"REPLYFLOW_ALLOW_FROM":             func(c *Config) { c.AllowFrom = []string{"webchat:alice"} },
		"REPLYFLOW_OWNERS":                 func(c *Config) { c.Owners = []string{"webchat:alice"} },
		"REPLYFLOW_REQUESTER_MAY_DECIDE":   func(c *Config) { c.RequesterMayDecide = !c.RequesterMayDecide },
		"REPLYFLOW_PROPOSAL_TTL":           func(c *Config) { c.ProposalTTL = time.Hour },
		"REPLYFLOW_TURN_TIMEOUT":           func(c *Config) { c.TurnTimeout = time.Minute },
		"REPLYFLOW_TURN_ATTEMPTS":          func(c *Config) { c.TurnAttempts = 5 },
		"REPLYFLOW_DELIVERY_DEADLINE":      func(c *Config) { c.DeliveryDeadline = time.Hour },
		"REPLYFLOW_SESSION_IDLE_TTL":       func(c *Config) { c.SessionIdleTTL = time.Hour },
		"REPLYFLOW_MAX_STEPS":              func(c *Config) { c.MaxSteps = 3 },
		"REPLYFLOW_ACTIVATION":             func(c *Config) { c.Activation = "mention" },
		"REPLYFLOW_ACTIVATION_BY_CHANNEL":  func(c *Config) { c.ActivationByChannel = map[string]string{"telegram": "always"} },
		"REPLYFLOW_QUEUE_MODE_BY_CHANNEL":  func(c *Config) { c.QueueModeByChannel = map[string]string{"slack": "collect"} },
		"REPLYFLOW_DEBOUNCE_BY_CHANNEL":    func(c *Config) { c.DebounceByChannel = map[string]time.Duration{"webchat": 0} },
		"REPLYFLOW_CHUNK_LIMIT":            func(c *Config) { c.ChunkLimit = 1000 },
		"REPLYFLOW_REPLY_PREFIX":           func(c *Config) { c.ReplyPrefix = "[{model}] " },
		"REPLYFLOW_GATE_MODEL":             func(c *Config) { c.GateModel = "openai/gpt-mini" },
		"REPLYFLOW_REACTION_CLEAR_DELAY":   func(c *Config) { c.ReactionClearDelay = 0 },
		"REPLYFLOW_MAX_HISTORY_EVENTS":     func(c *Config) { c.MaxHistoryEvents = 500 },
		"REPLYFLOW_ALIASES":                func(c *Config) { c.Aliases = []string{"Robo"} },
		"REPLYFLOW_RESET_WORDS":            func(c *Config) { c.ResetWords = []string{"start over"} },
		"REPLYFLOW_QUEUE_CAP":              func(c *Config) { c.QueueCap = 5 },
		"REPLYFLOW_TURN_HEARTBEAT_TIMEOUT": func(c *Config) { c.TurnHeartbeatTimeout = time.Minute },
	} {
		cfg := base()
		change(&cfg)
		assert.NotEqual(t, was, fingerprint(cfg), "%s matters to sessions", name)
	}

	// What sessions never hold (a turn's activities read it, or it is
	// another process's) changes nothing: no reload for it.
	for name, change := range map[string]func(*Config){
		"REPLYFLOW_LOG_LEVEL":          func(c *Config) { c.LogLevel = "debug" },
		"REPLYFLOW_MAX_TOKENS":         func(c *Config) { c.MaxTokens = 4096 },
		"REPLYFLOW_SYSTEM_PROMPT_FILE": func(c *Config) { c.SystemPromptFile = "/etc/persona.md" },
		"REPLYFLOW_SHUTDOWN_GRACE":     func(c *Config) { c.ShutdownGrace = time.Minute },
		"REPLYFLOW_RATE_SENDER":        func(c *Config) { c.RateSender = "off" },
		"REPLYFLOW_CODEC_KEYS":         func(c *Config) { c.CodecKeys = "k1:c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTMyYg==" },
		"REPLYFLOW_WEBCHAT_BOT_TOKEN":  func(c *Config) { webchatOf(*c).BotToken = "a-new-bot-token" },
		"REPLYFLOW_TASK_QUEUE":         func(c *Config) { c.TaskQueue = "elsewhere" },
	} {
		cfg := base()
		change(&cfg)
		assert.Equal(t, was, fingerprint(cfg), "%s is not a session setting", name)
	}

	cfg := base()
	cfg.Owners, cfg.AllowFrom, cfg.Model = []string{"telegram:424242"}, []string{"webchat:alice"}, "openai/gpt-secretive"
	fp := fingerprint(cfg)
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, fp, "a digest, nothing else")
	for _, clear := range []string{"424242", "alice", "secretive", "openai"} {
		assert.False(t, strings.Contains(fp, clear), "%q shows in the fingerprint %s", clear, fp)
	}
}
