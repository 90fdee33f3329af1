package pipeline

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ptr[T any](v T) *T { return &v }

// The fixed commands, and /model and /queue, as code that reads only
// the fields below Directives sees them (commandFields).
func TestParseMessage(t *testing.T) {
	cases := []struct {
		text string
		want Parsed
	}{
		{"hello", Parsed{Text: "hello"}},
		{"/status", Parsed{Command: CommandStatus}},
		{"  /STATUS@my_bot  ", Parsed{Command: CommandStatus}},
		{"/status please", Parsed{Text: "/status please"}},
		{"/shrug ok", Parsed{Text: "/shrug ok"}},
		{"/stop", Parsed{Command: CommandStop}},
		{" claim-0a1b2c3d4e5f ", Parsed{Command: CommandClaim, Code: "claim-0a1b2c3d4e5f"}},
		{"claim-0a1b2c3d4e5f please", Parsed{Text: "claim-0a1b2c3d4e5f please"}},
		{"claim-xyz", Parsed{Text: "claim-xyz"}},
		{"/activation", Parsed{Command: CommandActivation}},
		{"/activation Mention", Parsed{Command: CommandActivation, Activation: "mention"}},
		{"/activation loud", Parsed{Command: CommandActivation, Error: "use /activation mention, smart, gated or always"}},
		{"/approve p3-1", Parsed{Command: CommandDecide, Decision: &Decision{ID: "p3-1", Decision: DecisionApprove}}},
		{"/reject p3-1 too expensive", Parsed{Command: CommandDecide, Decision: &Decision{ID: "p3-1", Decision: DecisionReject, Reason: "too expensive"}}},
		{"/reject", Parsed{Command: CommandDecide, Error: "use /reject <proposal id> [reason]"}},
		{"/new", Parsed{Command: CommandNew}},
		{"/reset", Parsed{Command: CommandNew}},
		{"/reset everything", Parsed{Text: "/reset everything"}},
		{"/model", Parsed{Command: CommandModel}},
		{"/model anthropic/claude-x", Parsed{Command: CommandModel, Model: "anthropic/claude-x"}},
		{"/model default", Parsed{Command: CommandModel, ModelReset: true}},
		{"/model gpt-4o", Parsed{Command: CommandModel, Error: `model "gpt-4o" is not provider/model (providers: openai, anthropic, demo)`}},
		{"Stop!", Parsed{Command: CommandStop}},
		{" wait... ", Parsed{Command: CommandStop}},
		{"ESC", Parsed{Command: CommandStop}},
		{"abort?!", Parsed{Command: CommandStop}},
		{"stop it", Parsed{Text: "stop it"}},
		{"don't stop", Parsed{Text: "don't stop"}},
		{"/queue", Parsed{Command: CommandQueue}},
		{"/queue default", Parsed{Command: CommandQueue, QueueReset: true}},
		{"/queue collect", Parsed{Command: CommandQueue, Queue: &QueuePatch{Mode: ptr(QueueCollect)}}},
		{"/queue Steer-Backlog debounce:2s cap:25 drop:old", Parsed{Command: CommandQueue, Queue: &QueuePatch{
			Mode: ptr(QueueSteerBacklog), Debounce: ptr(Duration(2 * time.Second)), Cap: ptr(25), Drop: ptr(DropOld)}}},
		{"/queue debounce:1500", Parsed{Command: CommandQueue, Queue: &QueuePatch{Debounce: ptr(Duration(1500 * time.Millisecond))}}},
		{"/queue interrupt stop that\nand do this", Parsed{Queue: &QueuePatch{Mode: ptr(QueueInterrupt)}, Text: "stop that\nand do this"}},
		{"/queue collect cap:3 hi there", Parsed{Queue: &QueuePatch{Mode: ptr(QueueCollect), Cap: ptr(3)}, Text: "hi there"}},
		{"/queue sideways", Parsed{Command: CommandQueue, Error: `unknown queue mode "sideways"; use one of followup, collect, steer, steer-backlog, interrupt`}},
		{"/queue collect cap:0", Parsed{Command: CommandQueue, Error: `cap must be a whole number from 1 to 1000, got "0"`}},
		{"/queue collect drop:all", Parsed{Command: CommandQueue, Error: `unknown drop policy "all"; use one of old, new, summarize`}},
		{"/queue collect debounce:2h", Parsed{Command: CommandQueue, Error: "debounce must be between 0 and 1m0s, got 2h0m0s"}},
		{"/queue collect color:red", Parsed{Command: CommandQueue, Error: `unknown /queue option "color"; use debounce:2s, cap:25 or drop:old|new|summarize`}},
	}
	for _, c := range cases {
		t.Run(c.text, func(t *testing.T) {
			assert.Equal(t, c.want, commandFields(parsePlain(c.text)))
		})
	}
}

func TestQueuePatchApply(t *testing.T) {
	base := QueueSettings{Mode: QueueFollowup, Debounce: Duration(time.Second), Cap: 20, Drop: DropSummarize}
	var nilPatch *QueuePatch
	assert.Equal(t, base, nilPatch.Apply(base))
	got := (&QueuePatch{Mode: ptr(QueueCollect), Cap: ptr(5)}).Apply(base)
	assert.Equal(t, QueueSettings{Mode: QueueCollect, Debounce: Duration(time.Second), Cap: 5, Drop: DropSummarize}, got)
	assert.Equal(t, "collect, debounce 1s, cap 5, drop summarize", got.Describe())
}

func TestRenderings(t *testing.T) {
	assert.Equal(t, "a\nb", JoinTexts([]string{"a", "b"}))
	assert.Equal(t, "[Queued messages while agent was busy]\n\n---\nQueued #1\nfirst\n\n---\nQueued #2\nsecond",
		RenderCollected([]string{"first", "second"}))
	assert.Equal(t, "[Queue overflow] Dropped 2 message(s) due to cap.\n- alice: one\n- bob: two",
		RenderOverflow(2, []string{"alice: one", "bob: two"}))

	assert.Equal(t, "alice: a b c", SummaryLine("alice", " a\n\tb   c "))
	long := SummaryLine("alice", strings.Repeat("é", 500))
	require.Equal(t, SummaryMaxRunes, utf8.RuneCountInString(long))
	assert.True(t, strings.HasSuffix(long, "…"))

	status := RenderStatus(StatusInfo{Session: "session:webchat:demo", Model: "demo/echo",
		Queue:      QueueSettings{Mode: QueueCollect, Debounce: Duration(time.Second), Cap: 20, Drop: DropOld},
		QueueDepth: 2, State: "thinking", LastTurn: 1234567 * time.Microsecond, LastOutcome: "answered", TurnsTotal: 7})
	assert.Equal(t, "Session session:webchat:demo\nModel: demo/echo\nQueue: collect, debounce 1s, cap 20, drop old (depth 2)\nState: thinking\nLast turn: answered in 1.235s (turns so far: 7)", status)
}
