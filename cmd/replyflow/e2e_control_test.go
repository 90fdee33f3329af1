package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/pipeline"
)

// usageModel answers like the test model, reports usage, summarizes
// when asked to, and records the reasoning effort of each prompt.
type usageModel struct {
	mu     sync.Mutex
	thinks []pipeline.ThinkLevel
}

func (*usageModel) Name() string { return "test/usage" }

func (m *usageModel) Complete(_ context.Context, p models.Prompt) (models.Completion, error) {
	if strings.HasPrefix(p.System, "You summarize") {
		return models.Completion{Text: "Alice said hello twice.", Usage: pipeline.Usage{InputTokens: 40, OutputTokens: 6}}, nil
	}
	m.mu.Lock()
	m.thinks = append(m.thinks, p.Think)
	m.mu.Unlock()
	return models.Completion{Text: "You said: " + lastUserText(p), Usage: pipeline.Usage{InputTokens: 10, OutputTokens: 3}}, nil
}

// fileEvent is the file of a web chat message event.
type fileEvent struct {
	Name string `json:"name"`
	Data string `json:"data"`
}

func TestChatControlEndToEnd(t *testing.T) {
	cfg := testConfig(t)
	cfg.Owners = []string{"webchat:boss"}
	s := startStack(t, cfg)
	model := &usageModel{}
	s.startWorker(model)
	chat := uniqueChat("cc-control")
	events := subscribe(t, s.baseURL, chat)

	assert.Equal(t, "You are webchat:alice (not an owner).", s.command(events, chat, "w1", "alice", "/whoami"))
	assert.Equal(t, "You said: hello", s.command(events, chat, "m1", "boss", "hello /think high"))
	assert.Equal(t, "Set for this chat: usage tokens.", s.command(events, chat, "u1", "alice", "/usage tokens"))
	assert.Equal(t, "You said: hello again\n\n— 10 in · 3 out tokens", s.command(events, chat, "m2", "alice", "hello again"))
	model.mu.Lock()
	assert.Equal(t, []pipeline.ThinkLevel{pipeline.ThinkHigh, ""}, model.thinks, "the directive held for its own turn only")
	model.mu.Unlock()
	assert.Contains(t, s.command(events, chat, "c1", "alice", "/context"), "- transcript: 4 of 4 stored message(s) fit")

	// The transcript as a file, under the command.
	code, body := s.post(chat, `{"message_id":"e1","sender_id":"alice","text":"/export"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	file := fetchFile(t, events, "e1")
	assert.Regexp(t, `^transcript-`+regexp.QuoteMeta(chat)+`-\d{4}-\d\d-\d\d\.md$`, file.Name)
	doc, err := base64.StdEncoding.DecodeString(file.Data)
	require.NoError(t, err)
	assert.Contains(t, string(doc), "# Conversation session:webchat:"+chat+"\n")
	assert.Contains(t, string(doc), "> hello again")
	var out strings.Builder
	require.NoError(t, exportCommand(context.Background(), s.cfg, []string{"webchat:" + chat}, &out, time.Now()))
	assert.Contains(t, out.String(), "> You said: hello again", "replyflow export prints the same transcript")

	assert.Equal(t, "Compacted: 4 message(s) became a summary of about 6 tokens (demo/echo). The conversation goes on from it.",
		s.command(events, chat, "k1", "alice", "/compact what was said"))
	assert.Contains(t, s.command(events, chat, "c2", "alice", "/context"), "2 of 2 stored message(s) fit, ")
	assert.Contains(t, s.command(events, chat, "c3", "alice", "/context"), "(starts from a /compact summary)")

	// Muted: the turn runs, nothing is said, the message shows ✅.
	assert.Equal(t, "⚠️ Only owners may mute or unmute this chat.", s.command(events, chat, "x1", "alice", "/send off"))
	assert.Equal(t, "Muted: turns still run, but no reply is sent here until /send on.", s.command(events, chat, "o1", "boss", "/send off"))
	code, body = s.post(chat, `{"message_id":"q1","sender_id":"alice","text":"anyone?"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	quiet := events.collectUntil(t, 30*time.Second, isReaction("q1", "✅"))
	assert.Zero(t, countMessages(quiet), "nothing is sent while muted")
	assert.Equal(t, "Unmuted: replies are sent here again.", s.command(events, chat, "o2", "boss", "/send on"))
	assert.Equal(t, "This session: 3 answered turn(s), 30 in · 9 out tokens. Footer: tokens (/usage off|tokens|full).\nWhat is left of today's budgets: /budget",
		s.command(events, chat, "u2", "alice", "/usage"))

	snap := s.state(chat)
	require.NotNil(t, snap.Chat)
	assert.Equal(t, pipeline.UsageTokens, snap.Chat.Usage)
	assert.Equal(t, pipeline.Usage{InputTokens: 30, OutputTokens: 9}, snap.Chat.UsageTotal)
	recordHistory(t, s.client, chat, "chat_control")
}

// A member of a chat is an attacker on its bill: every setting that raises
// what a turn costs, or changes the chat for everyone, is refused to them,
// as a command and inside a message, and nothing they raise reaches the
// model; an owner's goes through.
func TestAMemberCannotRaiseWhatTheChatCosts(t *testing.T) {
	cfg := testConfig(t)
	cfg.Owners = []string{"webchat:boss"}
	s := startStack(t, cfg)
	model := &usageModel{}
	s.startWorker(model)
	chat := uniqueChat("cc-member-costs")
	events := subscribe(t, s.baseURL, chat)

	for id, text := range map[string]string{"a1": "/think high", "a2": "/verbose on", "a3": "/usage full", "a4": "/queue cap:1000 debounce:1m"} {
		assert.Contains(t, s.command(events, chat, id, "mallory", text), "⚠️ Only owners may set", text)
	}
	assert.Contains(t, s.command(events, chat, "a5", "mallory", "what is 2+2? /think high"), "Your message was not sent to the model")
	assert.Equal(t, "You said: what is 2+2?", s.command(events, chat, "m1", "mallory", "what is 2+2?"))
	assert.Equal(t, "Set for this chat: think low.", s.command(events, chat, "o1", "boss", "/think low"))
	assert.Equal(t, "You said: and now?", s.command(events, chat, "m2", "mallory", "and now?"))
	model.mu.Lock()
	assert.Equal(t, []pipeline.ThinkLevel{"", pipeline.ThinkLow}, model.thinks, "only the owner's setting reached the model")
	model.mu.Unlock()

	snap := s.state(chat)
	require.NotNil(t, snap.Chat)
	assert.False(t, snap.Chat.Verbose)
	assert.NotEqual(t, pipeline.UsageFull, snap.Chat.Usage)
	assert.Equal(t, cfg.QueueCap, snap.Queue.Cap, "the queue kept the operator's cap")
	assert.NotEqual(t, time.Minute, snap.Queue.Debounce.D(), "and its debounce")
	recordHistory(t, s.client, chat, "member_refused")
}

// fetchFile waits for the file message answering messageID.
func fetchFile(t *testing.T, events *eventStream, messageID string) fileEvent {
	t.Helper()
	seen := events.collectUntil(t, 30*time.Second, isReplyTo(messageID))
	last := seen[len(seen)-1]
	require.NotNil(t, last.File, "the answer to %s is a file: %+v", messageID, last)
	return *last.File
}

func TestPerSenderSessionsInAGroupChat(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", temporalServer.FrontendHostPort()) // for replyflow sessions
	cfg := testConfig(t)
	cfg.SessionScope = "per-sender"
	cfg.Activation = "always"
	s := startStack(t, cfg)
	s.startWorker(&testModel{})
	chat := uniqueChat("ps-group")
	events := subscribe(t, s.baseURL, chat)

	for i, sender := range []string{"ana", "ben"} {
		id := fmt.Sprintf("g%d", i)
		code, body := s.post(chat, fmt.Sprintf(`{"message_id":%q,"sender_id":%q,"chat_type":"group","text":"I am %s"}`, id, sender, sender))
		require.Equal(t, http.StatusAccepted, code, body)
		seen := events.collectUntil(t, 30*time.Second, isReplyTo(id))
		assert.Equal(t, "You said: I am "+sender, seen[len(seen)-1].Text, "each is answered in the same chat")
	}
	for _, sender := range []string{"ana", "ben"} {
		snap := s.stateOf(pipeline.SessionKey{Channel: "webchat", Chat: chat, Sender: sender})
		assert.Equal(t, 1, snap.Counters.Turns, "%s has a session of their own", sender)
	}
	var listed strings.Builder
	require.Eventually(t, func() bool {
		listed.Reset()
		if err := sessionsCommand(context.Background(), s.cfg, []string{"--chat", chat}, &listed, s.logger); err != nil {
			listed.WriteString(err.Error())
			return false
		}
		return strings.Contains(listed.String(), "session:webchat:"+chat+":~ana") && strings.Contains(listed.String(), "session:webchat:"+chat+":~ben")
	}, 30*time.Second, 200*time.Millisecond, "replyflow sessions --chat finds both (visibility is eventually consistent): %s", &listed)
	recordHistoryOf(t, s.client, pipeline.SessionKey{Channel: "webchat", Chat: chat, Sender: "ana"}, "per_sender_session")
}
