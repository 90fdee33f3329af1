package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/replyflow/replyflow/activities/store"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/gateway"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workers"
)

// TestConfigurationDocListsEveryVariableWithItsDefault keeps
// docs/configuration.md's table, the users' reference, in step with Config
// and every registered platform's settings: a row for each variable, and
// its default where it has one.
func TestConfigurationDocListsEveryVariableWithItsDefault(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	require.NoError(t, err)
	known := knownVariables()
	require.Greater(t, len(known), 60, "every variable is seen")
	for name, f := range known {
		row := "| `" + name + "` | "
		idx := strings.Index(string(doc), row)
		if !assert.GreaterOrEqual(t, idx, 0, "docs/configuration.md has no row for %s", name) {
			continue
		}
		if def := f.Tag.Get("default"); def != "" {
			rest := string(doc[idx+len(row):])
			line, _, _ := strings.Cut(rest, "\n")
			assert.True(t, strings.HasPrefix(line, "`"+def+"`"), "docs/configuration.md's default for %s is not %q: %s", name, def, line)
		}
	}
}

func anys[T any](values []T) []any {
	out := make([]any, len(values))
	for i, v := range values {
		out[i] = v
	}
	return out
}

func TestConfigValidationNamesTheVariable(t *testing.T) {
	cfg := testConfig(t)
	cfg.ReactionClearDelay = 11 * time.Minute
	cfg.LogFormat = "xml"
	err := cfg.validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "REPLYFLOW_REACTION_CLEAR_DELAY must be between 0 and 10m")
	assert.Contains(t, err.Error(), "REPLYFLOW_LOG_FORMAT")
}

// Every heartbeat of a model attempt reaches the server, at the shortest
// heartbeat timeout too: the attempt heartbeats every third of it, and
// the worker holds a heartbeat back at most workers.HeartbeatThrottle.
// With a longer throttle the server would see fewer heartbeats than the
// attempt sends, and a live worker whose one heartbeat was late would
// look dead.
func TestEveryHeartbeatOfAModelAttemptReachesTheServer(t *testing.T) {
	cfg := testConfig(t)
	cfg.TurnHeartbeatTimeout = minTurnHeartbeatTimeout - time.Millisecond
	assert.ErrorContains(t, cfg.validate(), "REPLYFLOW_TURN_HEARTBEAT_TIMEOUT must be at least")
	assert.LessOrEqual(t, workers.HeartbeatThrottle, minTurnHeartbeatTimeout/3)
}

func TestRateLimitDefaultsAreTheGatewaysAndABadOneIsNamed(t *testing.T) {
	cfg := testConfig(t)
	want := gateway.DefaultLimits()
	want.AllowFrom = []string{"*"}
	assert.Equal(t, want, cfg.limits(), "the envconfig defaults are gateway.DefaultLimits, whose comment says why")

	cfg.RateSender, cfg.RateChat, cfg.RateNewSessions = "off", "20", "0@1s"
	err := cfg.validate()
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "REPLYFLOW_RATE_SENDER", "off is a value")
	assert.Contains(t, err.Error(), "REPLYFLOW_RATE_CHAT")
	assert.Contains(t, err.Error(), "REPLYFLOW_RATE_NEW_SESSIONS")
	cfg.RateChat, cfg.RateNewSessions = "off", "off"
	require.NoError(t, cfg.validate())
	assert.True(t, cfg.limits().Sender.Off())
}

func TestSessionSettingsAreCheckedAtStart(t *testing.T) {
	cfg := testConfig(t)
	cfg.SessionScope = "per-user"
	cfg.SessionScopeByChannel = map[string]string{"telegram": "per-sender", "slack": "everyone"}
	cfg.ResetWords = []string{"start over", "/status"}
	cfg.ReplyPrefix = "[{model}]\n"
	err := cfg.validate()
	require.Error(t, err)
	for _, want := range []string{
		`REPLYFLOW_SESSION_SCOPE: unknown session scope "per-user"`,
		`REPLYFLOW_SESSION_SCOPE_BY_CHANNEL for slack: unknown session scope "everyone"`,
		`REPLYFLOW_RESET_WORDS: reset word "/status" already means something else here (/status)`,
		"REPLYFLOW_REPLY_PREFIX must be one line",
	} {
		assert.Contains(t, err.Error(), want)
	}
	assert.NotContains(t, err.Error(), "for telegram")

	cfg = testConfig(t)
	cfg.SessionScopeByChannel = map[string]string{"telegram": "per-sender"}
	cfg.ResetWords = []string{"start over"}
	cfg.ReplyPrefix = "[{model}] "
	require.NoError(t, cfg.validate())
	assert.Equal(t, pipeline.SessionScopePerSender, cfg.sessionScope("telegram"))
	assert.Equal(t, pipeline.SessionScopeShared, cfg.sessionScope("slack"))
	s := cfg.settings()
	assert.Equal(t, []string{"start over"}, s.ResetWords, "reset words reach sessions through their recorded settings")
	assert.Equal(t, "[{model}] ", s.ReplyPrefix)
}

func TestARenamedVariableIsRefusedWithItsNewName(t *testing.T) {
	t.Setenv("REPLYFLOW_WORKER_STOP_TIMEOUT", "45s")
	_, err := loadConfig()
	assert.ErrorContains(t, err, "REPLYFLOW_WORKER_STOP_TIMEOUT is now REPLYFLOW_SHUTDOWN_GRACE")
}

// TestOnlyOwnersAndOperatorsDecideByDefault: a requester approving their
// own proposal would let anyone who can message the bot run any
// requires_approval tool, so it is an opt-in.
func TestOnlyOwnersAndOperatorsDecideByDefault(t *testing.T) {
	cfg, err := readConfig("replyflow_test_unset")
	require.NoError(t, err)
	assert.False(t, cfg.RequesterMayDecide, "REPLYFLOW_REQUESTER_MAY_DECIDE defaults to false")
	assert.False(t, cfg.settings().RequesterMayDecide, "and sessions are given that default")
}

// A session's chunk limit is REPLYFLOW_CHUNK_LIMIT, or with none (0) the
// message limit its platform declares; a channel no platform serves gets
// pipeline.DefaultChunkLimit.
func TestChunkLimitIsThePlatformsUnlessConfigured(t *testing.T) {
	cfg, err := readConfig("replyflow_test_unset")
	require.NoError(t, err)
	limitOf := func(cfg Config, channel string) int {
		return cfg.channelSettings(pipeline.SessionKey{Channel: channel}, cfg.settings()).ChunkLimit
	}
	for channel, want := range map[string]int{"webchat": 8000, "telegram": 4096, "discord": 2000, "slack": 4000, "elsewhere": pipeline.DefaultChunkLimit} {
		assert.Equal(t, want, limitOf(cfg, channel), channel)
	}

	t.Setenv("REPLYFLOW_CHUNKTEST_CHUNK_LIMIT", "1000")
	cfg, err = readConfig("replyflow_chunktest")
	require.NoError(t, err)
	for _, channel := range []string{"webchat", "discord", "elsewhere"} {
		assert.Equal(t, 1000, limitOf(cfg, channel), "REPLYFLOW_CHUNK_LIMIT holds on %s", channel)
	}
}

func TestMediaBoundsAreCheckedAndReachTheStore(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, cfg.validate())
	assert.Equal(t, store.MediaLimits{ChatFiles: 50, ChatBytes: 100 << 20}, cfg.mediaLimits())
	cfg.MediaRetention, cfg.MediaChatFiles, cfg.MediaChatBytes = time.Minute, 0, 1000
	err := cfg.validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "REPLYFLOW_MEDIA_RETENTION must be 0")
	assert.Contains(t, err.Error(), "REPLYFLOW_MEDIA_CHAT_FILES must be from 1")
	assert.Contains(t, err.Error(), "REPLYFLOW_MEDIA_CHAT_BYTES must hold at least one file")
	cfg.MediaRetention = 48 * time.Hour
	assert.Equal(t, 48*time.Hour, cfg.retention().Media)
}

// Voice replies are off by default, with OpenAI's gpt-4o-mini-tts in
// alloy ready for the chats that switch them on; the default cannot be
// on without a speech model, and an empty model builds no speaker.
func TestVoiceRepliesSettings(t *testing.T) {
	cfg := testConfig(t)
	assert.False(t, cfg.VoiceReplies)
	assert.Equal(t, "gpt-4o-mini-tts", cfg.VoiceModel)
	assert.Equal(t, "alloy", cfg.VoiceName)
	v := cfg.voice()
	require.NotNil(t, v)
	assert.False(t, v.Default)
	assert.Equal(t, "openai/gpt-4o-mini-tts", v.Model, "priced as REPLYFLOW_MODEL_PRICES names it")

	cfg.VoiceReplies, cfg.VoiceModel = true, ""
	assert.ErrorContains(t, cfg.validate(), "REPLYFLOW_VOICE_REPLIES=true needs REPLYFLOW_VOICE_MODEL")
	assert.Nil(t, cfg.voice())
	cfg.VoiceModel, cfg.VoiceName = "tts-1", ""
	assert.ErrorContains(t, cfg.validate(), "REPLYFLOW_VOICE_NAME must name a voice")
}
