package activities

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// voiceOutbound is a platform with voice notes.
type voiceOutbound struct {
	fakeOutbound
	voices   []pipeline.Delivery
	audio    [][]byte
	voiceErr error
}

func (v *voiceOutbound) SendVoice(_ context.Context, d pipeline.Delivery, f adapters.File) (string, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.voiceErr != nil {
		return "", v.voiceErr
	}
	v.voices = append(v.voices, d)
	v.audio = append(v.audio, f.Data)
	return "voice-1", nil
}

func (v *voiceOutbound) voiceCount() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.voices)
}

// fakeSpeaker speaks "audio:<text>", or fails with err.
type fakeSpeaker struct {
	mu   sync.Mutex
	said []string
	err  error
	// block makes Speak wait for its context to end, like a slow API.
	block bool
}

func (s *fakeSpeaker) Speak(ctx context.Context, text string) ([]byte, error) {
	s.mu.Lock()
	if s.block {
		s.mu.Unlock()
		<-ctx.Done()
		return nil, ctx.Err()
	}
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	s.said = append(s.said, text)
	return []byte("audio:" + text), nil
}

func (s *fakeSpeaker) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.said...)
}

type voiceFixture struct {
	db      *store.Store
	out     *voiceOutbound
	speaker *fakeSpeaker
	acts    *Activities
}

func newVoiceFixture(t *testing.T, def bool) *voiceFixture {
	t.Helper()
	db, err := store.Open(context.Background(), sqliteDSN(t))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	f := &voiceFixture{db: db, out: &voiceOutbound{}, speaker: &fakeSpeaker{}}
	f.acts = &Activities{
		Store: db, Outbound: map[string]adapters.Outbound{"webchat": f.out}, Logger: slog.Default(),
		Settings: pipeline.Settings{Owners: []string{"webchat:boss"}},
		Voice:    &Voice{Speaker: f.speaker, Model: "openai/gpt-4o-mini-tts", Default: def},
	}
	return f
}

func (f *voiceFixture) say(t *testing.T, group bool, sender, text string) string {
	t.Helper()
	req := pipeline.TurnRequest{Session: session, TurnID: "turn-" + sender + text, Model: "test/none", Text: text, Group: group,
		Messages: []pipeline.TurnMessage{{MessageID: "m-" + text, SenderID: sender, Text: text, At: time.Now()}}}
	v, err := newActivityEnv(f.acts).ExecuteActivity(f.acts.AgentTurn, req)
	require.NoError(t, err)
	var got pipeline.TurnResult
	require.NoError(t, v.Get(&got))
	return got.Reply
}

// remember writes a model's reply of turnID to the session's transcript,
// as AgentTurn does.
func (f *voiceFixture) remember(t *testing.T, turnID, reply string) {
	t.Helper()
	entry, err := f.db.SessionEntry(context.Background(), session.WorkflowID())
	require.NoError(t, err)
	require.NoError(t, f.db.Append(context.Background(), entry.TranscriptID, []store.Message{
		{Key: turnID + "/0/user", Role: "user", Body: "question", CreatedAt: time.Now()},
		{Key: turnID + "/0/assistant", Role: "assistant", Body: reply, CreatedAt: time.Now()},
	}))
}

func TestParseVoiceCommand(t *testing.T) {
	for _, c := range []struct {
		text           string
		set, on, isCmd bool
		malformed      bool
	}{
		{"/voice", false, false, true, false},
		{"/Voice@replybot on", true, true, true, false},
		{"/voice OFF", true, false, true, false},
		{"/voice loud", false, false, true, true},
		{"/voice on now", false, false, true, true},
		{"/voices on", false, false, false, false},
		{"say /voice on", false, false, false, false},
		{"", false, false, false, false},
	} {
		set, on, malformed, ok := parseVoiceCommand(c.text)
		assert.Equal(t, c.isCmd, ok, c.text)
		assert.Equal(t, c.set, set, c.text)
		assert.Equal(t, c.on, on, c.text)
		assert.Equal(t, c.malformed, malformed != "", c.text)
	}
}

// /voice shows and switches the chat's voice replies without the model
// (the fixture has none): anyone in a direct chat, owners only in a
// group; the choice is the chat's, in the store.
func TestVoiceCommandSwitchesTheChatsVoiceReplies(t *testing.T) {
	f := newVoiceFixture(t, false)
	assert.Contains(t, f.say(t, false, "alice", "/voice"), "Voice replies are off in this chat")
	assert.Contains(t, f.say(t, false, "alice", "/voice on"), "Voice replies are on in this chat")
	on, set, err := f.db.VoiceReplies(context.Background(), session.WorkflowID())
	require.NoError(t, err)
	assert.True(t, on && set, "stored for the chat")
	assert.Contains(t, f.say(t, false, "alice", "/voice"), "Voice replies are on in this chat")

	assert.Contains(t, f.say(t, true, "alice", "/voice off"), "Only owners switch voice replies in a group")
	on, _, err = f.db.VoiceReplies(context.Background(), session.WorkflowID())
	require.NoError(t, err)
	assert.True(t, on, "a member's switch in a group changes nothing")
	assert.Contains(t, f.say(t, true, "boss", "/voice off"), "Voice replies are off in this chat")
	on, _, err = f.db.VoiceReplies(context.Background(), session.WorkflowID())
	require.NoError(t, err)
	assert.False(t, on)

	assert.Contains(t, f.say(t, false, "alice", "/voice loudly"), "/voice takes on or off")
	assert.Empty(t, f.speaker.calls(), "the command speaks nothing")
	assert.Empty(t, f.out.sent, "the answer is the turn's, delivered by the session")
}

func TestVoiceCommandSaysWhenVoiceRepliesAreNotSetUp(t *testing.T) {
	f := newVoiceFixture(t, false)
	f.acts.Voice = nil
	assert.Contains(t, f.say(t, false, "alice", "/voice on"), "not set up on this agent")
	f = newVoiceFixture(t, false)
	f.acts.Outbound["webchat"] = &fakeOutbound{}
	assert.Contains(t, f.say(t, false, "alice", "/voice on"), "This platform takes no voice replies")
}

// With voice on, the last chunk's delivery also speaks the whole reply
// the model wrote, once: a retry of the delivery sends neither the text
// nor the voice again, and does not pay for the speech again.
func TestDeliverSpeaksTheReplyOnceAcrossARetry(t *testing.T) {
	f := newVoiceFixture(t, true)
	f.remember(t, "t1", "The answer is 42.")
	d := pipeline.Delivery{Session: session, IdempotencyKey: session.WorkflowID() + "/t1/0", Text: "The answer is 42.\n\n— 12 tokens", Total: 1, Whole: true}
	got := deliver(t, f.acts, d)
	assert.Equal(t, "p-1", got.PlatformMessageID)
	assert.Equal(t, []string{"The answer is 42."}, f.speaker.calls(), "the reply as the model wrote it, without the footer")
	require.Equal(t, 1, f.out.voiceCount())
	assert.Equal(t, session.WorkflowID()+"/t1/0/voice", f.out.voices[0].IdempotencyKey)
	assert.Equal(t, "", f.out.voices[0].Text, "no caption")
	assert.Equal(t, []byte("audio:The answer is 42."), f.out.audio[0])
	id, found, err := f.db.PlatformID(context.Background(), session.WorkflowID(), d.IdempotencyKey+"/voice")
	require.NoError(t, err)
	assert.True(t, found, "the voice is in the delivery ledger")
	assert.Equal(t, "voice-1", id)

	deliver(t, f.acts, d) // the activity's retry
	assert.Len(t, f.out.sent, 1, "the text is not sent again")
	assert.Equal(t, 1, f.out.voiceCount(), "the voice is not sent again")
	assert.Len(t, f.speaker.calls(), 1, "nor spoken again")
}

// A reply cut in chunks is spoken whole (to the speech API's bound),
// with its last chunk only.
func TestDeliverSpeaksAReplyInChunksWithItsLastChunk(t *testing.T) {
	f := newVoiceFixture(t, true)
	reply := strings.Repeat("A long sentence. ", 300)
	f.remember(t, "t2", strings.TrimSpace(reply))
	first := deliver(t, f.acts, pipeline.Delivery{Session: session, IdempotencyKey: session.WorkflowID() + "/t2/0", Text: reply, Total: 1, Whole: true})
	require.NotEmpty(t, first.Rest)
	assert.Empty(t, f.speaker.calls(), "not before the last chunk")
	for i, text := range first.Rest {
		deliver(t, f.acts, pipeline.Delivery{Session: session, IdempotencyKey: session.WorkflowID() + "/t2/" + string(rune('1'+i)), Text: text, Index: i + 1, Total: len(first.Rest) + 1})
	}
	require.Len(t, f.speaker.calls(), 1)
	spoken := f.speaker.calls()[0]
	assert.True(t, spoken == models.SpeechText(reply, models.MaxSpeechChars), "the whole reply, cut to the speech API's bound at a sentence")
	assert.Greater(t, len(spoken), len(first.Rest[len(first.Rest)-1]), "more than the last chunk")
	assert.True(t, strings.HasSuffix(spoken, "sentence."))
	assert.Equal(t, 1, f.out.voiceCount())
}

// A failed speech call, or a platform that refuses the voice, leaves the
// text delivered and the delivery successful; nothing is recorded, so a
// later retry of the delivery could still send it.
func TestAFailedVoiceLeavesTheTextDelivered(t *testing.T) {
	f := newVoiceFixture(t, true)
	f.remember(t, "t3", "Hello there.")
	f.speaker.err = errors.New("speech API down")
	d := pipeline.Delivery{Session: session, IdempotencyKey: session.WorkflowID() + "/t3/0", Text: "Hello there.", Total: 1}
	got := deliver(t, f.acts, d)
	assert.Equal(t, "p-1", got.PlatformMessageID)
	assert.Len(t, f.out.sent, 1)
	assert.Equal(t, 0, f.out.voiceCount())
	_, found, err := f.db.PlatformID(context.Background(), session.WorkflowID(), d.IdempotencyKey+"/voice")
	require.NoError(t, err)
	assert.False(t, found)

	f.speaker.err = nil
	f.out.voiceErr = &adapters.Error{Kind: adapters.Permanent, Op: "send voice", Err: errors.New("too large")}
	deliver(t, f.acts, d)
	assert.Len(t, f.out.sent, 1, "the text is not sent again")
	assert.Equal(t, 0, f.out.voiceCount())
}

// Only replies the model wrote are spoken, and only in chats with voice
// replies: not the answers given without the model (/voice's own, a
// notice), and nothing where voice is off (no speech call is made).
func TestOnlyTheModelsRepliesAreSpokenAndOnlyWhereVoiceIsOn(t *testing.T) {
	f := newVoiceFixture(t, true)
	f.remember(t, "t4", "Earlier reply.")
	deliver(t, f.acts, pipeline.Delivery{Session: session, IdempotencyKey: session.WorkflowID() + "/t5/0", Text: "🔊 Voice replies are on", Total: 1})
	deliver(t, f.acts, pipeline.Delivery{Session: session, IdempotencyKey: session.WorkflowID() + "/reply/m9", Text: "Commands:", Total: 1})
	assert.Empty(t, f.speaker.calls())

	f = newVoiceFixture(t, false)
	f.remember(t, "t6", "A reply.")
	deliver(t, f.acts, pipeline.Delivery{Session: session, IdempotencyKey: session.WorkflowID() + "/t6/0", Text: "A reply.", Total: 1})
	assert.Empty(t, f.speaker.calls(), "voice is off by default here")
	require.NoError(t, f.db.SetVoiceReplies(context.Background(), session.WorkflowID(), true, "webchat:alice", time.Now()))
	f.remember(t, "t7", "Another reply.")
	deliver(t, f.acts, pipeline.Delivery{Session: session, IdempotencyKey: session.WorkflowID() + "/t7/0", Text: "Another reply.", Total: 1})
	assert.Equal(t, []string{"Another reply."}, f.speaker.calls())
}

// The speech call counts against the chat's budget, at the speech
// model's price, and is not made once the budget is spent.
func TestTheSpeechCallCountsAgainstTheChatsBudget(t *testing.T) {
	f := newVoiceFixture(t, true)
	f.acts.Spend = &Spend{Store: f.db, Budgets: Budgets{ChatTokens: 1000}, Prices: map[string]Price{"openai/gpt-4o-mini-tts": {InputPerMillion: 600}}, Deployment: "q"}
	f.remember(t, "t8", "Counted reply.")
	deliver(t, f.acts, pipeline.Delivery{Session: session, IdempotencyKey: session.WorkflowID() + "/t8/0", Text: "Counted reply.", Total: 1})
	day, _ := f.acts.Spend.BudgetDay(time.Now())
	key := store.BudgetKey{Day: day, Scope: store.ScopeChat, Subject: session.WorkflowID()}
	usage, err := f.db.BudgetUsage(context.Background(), []store.BudgetKey{key})
	require.NoError(t, err)
	assert.Positive(t, usage[key].Tokens)
	assert.Positive(t, usage[key].CostUSD)

	require.NoError(t, f.db.AddSpend(context.Background(), []store.BudgetKey{key}, 5000, 0, time.Now()))
	f.remember(t, "t9", "Refused reply.")
	deliver(t, f.acts, pipeline.Delivery{Session: session, IdempotencyKey: session.WorkflowID() + "/t9/0", Text: "Refused reply.", Total: 1})
	assert.Len(t, f.speaker.calls(), 1, "no speech call once the chat's budget is spent")
	assert.Len(t, f.out.sent, 2, "the text still goes out")
}

// OpenAISpeaker asks the speech API for Ogg/Opus in the configured voice
// (the fake provider's /v1/audio/speech).
func TestOpenAISpeakerAsksForOpus(t *testing.T) {
	srv := modeltest.NewOpenAI()
	defer srv.Close()
	sp := models.NewOpenAISpeaker("gpt-4o-mini-tts", "alloy", option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("test"))
	audio, err := sp.Speak(context.Background(), "Hello.")
	require.NoError(t, err)
	assert.Equal(t, modeltest.SpeechAudio("Hello."), audio)
	assert.Equal(t, []modeltest.Speech{{Model: "gpt-4o-mini-tts", Voice: "alloy", Format: "opus", Input: "Hello."}}, srv.Speeches())
	srv.FailSpeech(true)
	_, err = sp.Speak(context.Background(), "Hello.")
	assert.Error(t, err)
}

func TestSpeechTextIsCutAtASentence(t *testing.T) {
	assert.Equal(t, "Short.", models.SpeechText("  Short. ", 4096))
	long := strings.Repeat("One sentence here. ", 300) // 5700 characters
	got := models.SpeechText(long, models.MaxSpeechChars)
	assert.LessOrEqual(t, len([]rune(got)), models.MaxSpeechChars)
	assert.True(t, strings.HasSuffix(got, "here."), "ends at a sentence: %q", got[len(got)-20:])
	words := strings.Repeat("word ", 1000)
	got = models.SpeechText(words, 100)
	assert.LessOrEqual(t, len(got), 100)
	assert.True(t, strings.HasSuffix(got, "word"))
}

// A fast first delivery (the session's local activity) whose speech call
// does not fit its few seconds delivers the text and defers the voice
// with a retryable VoiceDeferred; the session's redelivery as an
// activity sends the text no more and speaks the reply.
func TestAFastDeliveryDefersTheVoiceToTheRedelivery(t *testing.T) {
	f := newVoiceFixture(t, true)
	f.remember(t, "t10", "Slow to speak.")
	d := pipeline.Delivery{Session: session, IdempotencyKey: session.WorkflowID() + "/t10/0", Text: "Slow to speak.", Total: 1, Whole: true}
	f.speaker.block = true
	env := newActivityEnv(f.acts)
	env.SetTestTimeout(2500 * time.Millisecond)
	_, err := env.ExecuteLocalActivity(f.acts.Deliver, d)
	require.Error(t, err)
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	assert.Equal(t, voiceDeferred, app.Type())
	assert.False(t, app.NonRetryable(), "the session redelivers a retryable failure as an activity")
	assert.Len(t, f.out.sent, 1, "the text is out")

	env = newActivityEnv(f.acts)
	env.SetTestTimeout(time.Second) // no time left to try at all
	_, err = env.ExecuteLocalActivity(f.acts.Deliver, d)
	require.True(t, errors.As(err, &app), "%v", err)
	assert.Equal(t, voiceDeferred, app.Type())

	f.speaker.block = false
	deliver(t, f.acts, d)
	assert.Len(t, f.out.sent, 1, "the text is not sent again")
	assert.Equal(t, []string{"Slow to speak."}, f.speaker.calls())
	assert.Equal(t, 1, f.out.voiceCount())
}
