package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

// commandEnv is a session whose chain is demo/echo → openai/gpt-4o-mini
// and whose one configured owner is web:boss.
func commandEnv(change ...func(*pipeline.Settings)) Env {
	env := envAt(0)
	env.Settings = pipeline.Settings{
		Models:          []string{"demo/echo", "openai/gpt-4o-mini"},
		Owners:          []string{"web:boss"},
		Queue:           debounce(time.Second),
		IdleTTL:         pipeline.Duration(time.Hour),
		TurnTimeout:     pipeline.Duration(2 * time.Minute),
		DeliveryTimeout: pipeline.Duration(30 * time.Second),
	}
	for _, c := range change {
		c(&env.Settings)
	}
	return env
}

// said is a message of sender in the test chat; "boss" is an owner.
func said(sender, id, text string) pipeline.Inbound {
	return pipeline.Inbound{Channel: "web", ChatID: "c", MessageID: id, SenderID: sender, Text: text}
}

// outcome sorts a part's effects: the events it emits, the texts it
// delivers, the calls it starts, and the settings it saves.
type outcome struct {
	events   []Event
	answers  []string
	delivers []Deliver
	calls    []Call
	saved    []pipeline.SessionSettings
}

func split(t *testing.T, effects []Effect) outcome {
	t.Helper()
	var o outcome
	for _, e := range effects {
		switch e := e.(type) {
		case Emit:
			o.events = append(o.events, e.Event)
		case Deliver:
			o.delivers = append(o.delivers, e)
			o.answers = append(o.answers, e.Delivery.Text)
		case Call:
			if e.Activity == pipeline.ActivitySaveSession {
				o.saved = append(o.saved, e.Args[1].(pipeline.SessionSettings))
				continue
			}
			o.calls = append(o.calls, e)
		default:
			t.Fatalf("unexpected effect %T", e)
		}
	}
	return o
}

// command runs in's text as a command of a session in these states.
func command(t *testing.T, env Env, c *ControlState, r *RepliesState, view CommandView, in pipeline.Inbound) outcome {
	t.Helper()
	p := Parse(env, in.Text)
	require.NotEmpty(t, p.Command, "%q is no command", in.Text)
	return split(t, Command(env, c, r, view, in, p))
}

// commandCase is a command, the events it emits for the other parts and
// its answer.
type commandCase struct {
	name   string
	in     pipeline.Inbound
	events []Event
	answer string
	// saved are the settings the command saves, when it saves.
	saved *pipeline.SessionSettings
	// others are the other parts' saved settings, when not the
	// activation alone.
	others *pipeline.SessionSettings
}

func commandCases() []commandCase {
	collect, three := pipeline.QueueCollect, 3
	return []commandCase{
		{name: "stop", in: said("u", "1", "/stop"), events: []Event{StopAsked{}}, answer: pipeline.AbortedReply},
		{name: "a stop word", in: said("u", "1", "Stop!"), events: []Event{StopAsked{}}, answer: pipeline.AbortedReply},
		{name: "new", in: said("u", "1", "/new"), events: []Event{NewTranscriptAsked{}}, answer: pipeline.NewTranscriptReply},
		{name: "a reset word", in: said("u", "1", "start over"), events: []Event{NewTranscriptAsked{}}, answer: pipeline.NewTranscriptReply},
		{name: "model in the chain", in: said("u", "1", "/model openai/gpt-4o-mini"), events: []Event{ModelChosen{Model: "openai/gpt-4o-mini"}},
			answer: "Model for this chat: openai/gpt-4o-mini (no fallback while it is chosen; /model default undoes it).",
			saved:  &pipeline.SessionSettings{ModelOverride: "openai/gpt-4o-mini", Activation: "smart"}},
		{name: "model default", in: said("u", "1", "/model default"), events: []Event{ModelChosen{}},
			answer: "Model back to the default chain: demo/echo → openai/gpt-4o-mini.", saved: &pipeline.SessionSettings{Activation: "smart"}},
		{name: "model shown", in: said("u", "1", "/model"),
			answer: "Model: demo/echo. Chain: demo/echo → openai/gpt-4o-mini. Change it with /model provider/model."},
		{name: "queue mode over the chat's cap", in: said("u", "1", "/queue collect"), events: []Event{QueuePatched{Patch: &pipeline.QueuePatch{Mode: &collect}}},
			others: &pipeline.SessionSettings{ModelOverride: "x/y", Queue: &pipeline.QueuePatch{Cap: &three}, Activation: "smart"},
			answer: "Queue settings for this chat: collect, debounce 1s, cap 3, drop .",
			saved:  &pipeline.SessionSettings{ModelOverride: "x/y", Queue: &pipeline.QueuePatch{Mode: &collect, Cap: &three}, Activation: "smart"}},
		{name: "queue reset", in: said("u", "1", "/queue reset"), others: &pipeline.SessionSettings{ModelOverride: "x/y", Activation: "smart"}, events: []Event{QueuePatched{Reset: true}},
			answer: "Queue settings back to the defaults: followup, debounce 1s, cap 10, drop .", saved: &pipeline.SessionSettings{ModelOverride: "x/y", Activation: "smart"}},
		{name: "queue shown", in: said("u", "1", "/queue"),
			answer: "Queue settings: followup, debounce 1s, cap 10, drop . Change them with /queue <mode> [debounce:2s] [cap:25] [drop:old|new|summarize]."},
		{name: "activation by an owner", in: said("boss", "1", "/activation always"), others: &pipeline.SessionSettings{ModelOverride: "x/y", Activation: "smart"}, events: []Event{ActivationChosen{Mode: "always"}},
			answer: "Activation for this chat: always.", saved: &pipeline.SessionSettings{ModelOverride: "x/y", Activation: "always"}},
		{name: "activation shown", in: said("u", "1", "/activation"),
			answer: "Activation: smart. Owners change it with /activation mention|smart|gated|always."},
		{name: "activation by a member", in: said("u", "1", "/activation always"), answer: "⚠️ Only owners may change the activation mode."},
		{name: "approve, answered by the proposals part", in: said("u", "1", "/approve p1-1"),
			events: []Event{DecisionAsked{Decision: pipeline.Decision{ID: "p1-1", Decision: "approve", By: "web:u"}, MessageID: "1"}}},
		{name: "several directives by an owner", in: said("boss", "1", "/think high /model openai/o3 /queue cap:3"),
			events: []Event{ModelChosen{Model: "openai/o3"}, QueuePatched{Patch: &pipeline.QueuePatch{Cap: &three}}},
			answer: "Set for this chat: think high, model openai/o3, queue cap 3.",
			saved:  &pipeline.SessionSettings{ModelOverride: "openai/o3", Queue: &pipeline.QueuePatch{Cap: &three}, Activation: "smart", Think: pipeline.ThinkHigh}},
		{name: "a parse error", in: said("u", "1", "/queue sideways"), answer: "⚠️ unknown queue mode \"sideways\"; use one of followup, collect, steer, steer-backlog, interrupt"},
		{name: "whoami", in: said("u", "1", "/whoami"), answer: "You are web:u (not an owner)."},
	}
}

func TestEachCommandTellsTheOtherPartsByEventsAndAnswersAtOnce(t *testing.T) {
	for _, tt := range commandCases() {
		t.Run(tt.name, func(t *testing.T) {
			env := commandEnv(func(s *pipeline.Settings) { s.ResetWords = []string{"start over"} })
			view := CommandView{Model: "demo/echo", Activation: "smart", Saved: pipeline.SessionSettings{Activation: "smart"}}
			if tt.others != nil {
				view.Saved = *tt.others
			}
			var c ControlState
			var r RepliesState
			got := command(t, env, &c, &r, view, tt.in)
			assert.Equal(t, tt.events, got.events)
			if tt.answer == "" {
				assert.Empty(t, got.answers)
			} else {
				assert.Equal(t, []string{tt.answer}, got.answers)
			}
			if tt.saved == nil {
				assert.Empty(t, got.saved, "nothing changed, nothing is saved")
			} else {
				assert.Equal(t, []pipeline.SessionSettings{*tt.saved}, got.saved)
			}
			assert.Equal(t, 1, r.Commands)
		})
	}
}

func TestTheControlCommandsShowAndSetTheChatsSettings(t *testing.T) {
	env := commandEnv()
	var c ControlState
	var r RepliesState
	view := CommandView{Status: pipeline.StatusInfo{Session: "s", State: "idle", TurnsTotal: 2}}
	ask := func(in pipeline.Inbound) string {
		got := command(t, env, &c, &r, view, in)
		require.Len(t, got.answers, 1)
		return got.answers[0]
	}
	assert.Equal(t, "Reasoning effort: off. Change it with /think off|low|medium|high.", ask(said("u", "1", "/think")))
	assert.Equal(t, "Tool lines: off. Change them with /verbose on|off.", ask(said("u", "2", "/verbose")))
	assert.Equal(t, "Replies in this chat are sent. Owners mute them with /send off.", ask(said("u", "3", "/send")))
	assert.Equal(t, "⚠️ Only owners may mute or unmute this chat.", ask(said("u", "4", "/send off")))
	assert.False(t, c.Muted)

	got := command(t, env, &c, &r, view, said("boss", "5", "/send off"))
	assert.Equal(t, []string{"Muted: turns still run, but no reply is sent here until /send on."}, got.answers)
	assert.Equal(t, []pipeline.SessionSettings{{Muted: true}}, got.saved)
	assert.Contains(t, ask(said("u", "6", "/status")), "Replies: muted (/send on unmutes)")

	c.AddUsage(&pipeline.Usage{InputTokens: 10, OutputTokens: 5})
	assert.Contains(t, ask(said("u", "7", "/usage")), "This session: 2 answered turn(s), 10 in · 5 out tokens")
	assert.Contains(t, ask(said("boss", "8", "/help")), "Owners only:")
	assert.Contains(t, ask(said("u", "9", "/help")), "Only owners raise /think, /verbose on, /usage full, /queue debounce, cap and drop here")
}

// A member may turn a chat's settings down; raising them, which raises
// what every later turn costs or changes the chat for everyone, is the
// owners', unless REPLYFLOW_MEMBER_SETTINGS opens the setting.
func TestMembersMayOnlyTurnSettingsDown(t *testing.T) {
	tests := []struct {
		text    string
		sender  string
		open    []string
		refusal string // "" when it is set
	}{
		{text: "/think high", sender: "u", refusal: pipeline.RefuseOwnersOnly([]string{"/think high"})},
		{text: "/think off", sender: "u"},
		{text: "/verbose on", sender: "u", refusal: pipeline.RefuseOwnersOnly([]string{"/verbose on"})},
		{text: "/verbose off", sender: "u"},
		{text: "/usage full", sender: "u", refusal: pipeline.RefuseOwnersOnly([]string{"/usage full"})},
		{text: "/usage tokens", sender: "u"},
		{text: "/queue cap:1000 debounce:1m", sender: "u", refusal: pipeline.RefuseOwnersOnly([]string{"/queue debounce:1m0s cap:1000"})},
		{text: "/queue collect", sender: "u"},
		{text: "/think medium /verbose on", sender: "u", refusal: pipeline.RefuseOwnersOnly([]string{"/think medium", "/verbose on"})},
		{text: "/think high /verbose on", sender: "boss"},
		{text: "/think high", sender: "u", open: []string{pipeline.MemberThink}},
		{text: "/verbose on", sender: "u", open: []string{pipeline.MemberThink}, refusal: pipeline.RefuseOwnersOnly([]string{"/verbose on"})},
		{text: "/queue cap:5", sender: "u", open: []string{pipeline.MemberQueue}},
	}
	for _, tt := range tests {
		t.Run(tt.sender+" "+tt.text, func(t *testing.T) {
			env := commandEnv(func(s *pipeline.Settings) { s.MemberSettings = tt.open })
			var c ControlState
			var r RepliesState
			got := command(t, env, &c, &r, CommandView{}, said(tt.sender, "1", tt.text))
			require.Len(t, got.answers, 1)
			if tt.refusal != "" {
				assert.Equal(t, tt.refusal, got.answers[0])
				assert.Empty(t, got.events, "a refused directive changes no other part")
				assert.Empty(t, got.saved, "nor is it saved")
				assert.Equal(t, ControlState{}, c, "nor kept")
				return
			}
			assert.NotContains(t, got.answers[0], "⚠️")
			assert.Len(t, got.saved, 1)
		})
	}
}

func TestAMemberCannotRaiseASettingInsideAMessage(t *testing.T) {
	env := commandEnv()
	inline := func(sender, text string) string {
		p := Parse(env, text)
		require.Empty(t, p.Command, "%q is a message for a turn", text)
		return RefuseDirectives(env, said(sender, "1", text), p.Directives, true)
	}
	assert.Equal(t, pipeline.RefuseOwnersOnly([]string{"/think high"})+" Your message was not sent to the model: send it again without them.",
		inline("u", "what is 2+2? /think high"))
	assert.Equal(t, pipeline.RefuseOwnersOnly([]string{"/queue cap:500"})+" Your message was not sent to the model: send it again without them.",
		inline("u", "and 3+3? /queue cap:500"))
	assert.Empty(t, inline("u", "and 4+4? /think off"))
	assert.Empty(t, inline("boss", "and 5+5? /think high"))
}

// /model picks only the chain or REPLYFLOW_MODEL_ALLOW for a sender who
// is not an owner, as a command and inside a message alike.
func TestModelIsLimitedToTheChainAndTheAllowListUnlessTheSenderIsAnOwner(t *testing.T) {
	env := commandEnv(func(s *pipeline.Settings) {
		s.ModelAllow = []string{"anthropic/claude-haiku-4-5", "openai/gpt-4o-mini"}
	})
	const refusal = "⚠️ /model may choose only demo/echo, openai/gpt-4o-mini, anthropic/claude-haiku-4-5 here; owners may choose any model."
	verified := said("carol", "1", "/model anthropic/claude-opus-4-1")
	verified.SenderIsOwner = true
	tests := []struct {
		name   string
		in     pipeline.Inbound
		answer string
		chosen []Event
	}{
		{name: "a member outside the open models", in: said("u", "1", "/model openai/o3-pro"), answer: refusal},
		{name: "a member inside the allow list", in: said("u", "1", "/model anthropic/claude-haiku-4-5"),
			answer: "Model for this chat: anthropic/claude-haiku-4-5 (no fallback while it is chosen; /model default undoes it).",
			chosen: []Event{ModelChosen{Model: "anthropic/claude-haiku-4-5"}}},
		{name: "a configured owner", in: said("boss", "1", "/model openai/o3-pro"),
			answer: "Model for this chat: openai/o3-pro (no fallback while it is chosen; /model default undoes it).",
			chosen: []Event{ModelChosen{Model: "openai/o3-pro"}}},
		{name: "an owner the adapter verified", in: verified,
			answer: "Model for this chat: anthropic/claude-opus-4-1 (no fallback while it is chosen; /model default undoes it).",
			chosen: []Event{ModelChosen{Model: "anthropic/claude-opus-4-1"}}},
		{name: "a member with other directives", in: said("u", "1", "/model openai/o3-pro /think off"),
			answer: refusal + " Nothing was sent to the model."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c ControlState
			var r RepliesState
			got := command(t, env, &c, &r, CommandView{}, tt.in)
			assert.Equal(t, []string{tt.answer}, got.answers)
			assert.Equal(t, tt.chosen, got.events)
			assert.Len(t, got.saved, len(tt.chosen), "only a choice is saved")
		})
	}
	p := Parse(env, "hello /model openai/o3-pro")
	assert.Equal(t, refusal+" Nothing was sent to the model.", RefuseDirectives(env, said("u", "1", p.Text), p.Directives, true))
}

func TestAButtonPressIsADecisionWhoseRefusalGoesToThePresserAlone(t *testing.T) {
	env := commandEnv()
	in := said("u", "press-1", "")
	in.Action, in.ReplyTo, in.ReplyToken, in.ThreadID = "reject:p2-1", "proposal-msg", "tok", "th"
	got := split(t, PressButton(env, in))
	assert.Equal(t, []Event{DecisionAsked{
		Decision: pipeline.Decision{ID: "p2-1", Decision: "reject", By: "web:u"},
		Button:   true, MessageID: "proposal-msg", ThreadID: "th", To: "u", Via: "tok", Pressed: "proposal-msg",
	}}, got.events)

	in.Action = "maybe:p2-1"
	assert.Empty(t, PressButton(env, in), "an action that names no decision is ignored")
}

// A typed /approve or /reject may name the session of its proposal
// (p1@ana, as the proposal message says): in that session it decides p1;
// in another, nothing, with the reason as the answer.
func TestATypedDecisionNamesTheSessionOfItsProposal(t *testing.T) {
	anas := commandEnv()
	anas.Key.Sender = "ana"
	var c ControlState
	var r RepliesState
	got := command(t, anas, &c, &r, CommandView{}, said("boss", "m1", "/reject p1@ana too much"))
	assert.Equal(t, []Event{DecisionAsked{Decision: pipeline.Decision{ID: "p1", Decision: "reject", By: "web:boss", Reason: "too much"}, MessageID: "m1"}}, got.events)
	assert.Empty(t, got.answers)

	bens := commandEnv()
	bens.Key.Sender = "ben"
	got = command(t, bens, &c, &r, CommandView{}, said("boss", "m2", "/approve p1@ana"))
	assert.Empty(t, got.events, "nothing is decided in ben's session")
	assert.Equal(t, []string{"⚠️ Proposal p1@ana is in session session:web:a:c:~ana, not this one (the session scope may have changed since it was posted), so nothing was decided; an operator can decide it with replyflow approve session:web:a:c:~ana p1."}, got.answers)
}

// TestAPressNamesTheSessionOfItsProposal is an owner's press on a
// proposal of another sender's per-sender session: it decides that
// session's proposal, and a session it does not name refuses it.
func TestAPressNamesTheSessionOfItsProposal(t *testing.T) {
	anas := commandEnv()
	anas.Key.Sender = "ana"
	chats := commandEnv()
	decided := DecisionAsked{Decision: pipeline.Decision{ID: "p1", Decision: "approve", By: "web:boss"}, Button: true, MessageID: "proposal-msg", To: "boss", Via: "tok", Pressed: "proposal-msg"}
	tests := []struct {
		name, action string
		env          Env
		refused      string // the refusal's text, "" when the press is a decision
	}{
		{name: "in the session it names", action: "approve:p1@ana", env: anas},
		{name: "a button posted before actions named a session", action: "approve:p1", env: anas},
		{name: "in a chat's session, with an old button", action: "approve:p1", env: chats},
		{name: "in another sender's session", action: "approve:p1@ben", env: anas,
			refused: "⚠️ this button is for proposal p1 of session session:web:a:c:~ben, not of this one (the session scope may have changed since it was posted), so nothing was decided; an operator can decide it with replyflow approve session:web:a:c:~ben p1"},
		{name: "in a chat's session after the scope changed", action: "approve:p1@ana", env: chats,
			refused: "⚠️ this button is for proposal p1 of session session:web:a:c:~ana, not of this one (the session scope may have changed since it was posted), so nothing was decided; an operator can decide it with replyflow approve session:web:a:c:~ana p1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := said("boss", "press-1", "")
			in.Action, in.ReplyTo, in.ReplyToken = tt.action, "proposal-msg", "tok"
			got := split(t, PressButton(tt.env, in))
			if tt.refused == "" {
				assert.Equal(t, []Event{decided}, got.events, "the proposal's ID without the session's sender")
				return
			}
			assert.Equal(t, []Event{NoticeWanted{MessageID: "proposal-msg", Text: tt.refused, To: "boss", Via: "tok"}}, got.events,
				"told to the presser alone, under the proposal message")
		})
	}
}
