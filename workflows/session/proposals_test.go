package session

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

const boss = "web:boss"

// proposalEnv is envAt with an owner, an hour's proposal TTL and a
// delivery timeout.
func proposalEnv(d time.Duration) Env {
	env := envAt(d)
	env.Settings.Owners = []string{boss}
	env.Settings.ProposalTTL = pipeline.Duration(time.Hour)
	env.Settings.DeliveryTimeout = pipeline.Duration(10 * time.Second)
	return env
}

func toolCall(n int) pipeline.ToolCall {
	return pipeline.ToolCall{ID: "c" + strconv.Itoa(n), Name: "pay", Arguments: fmt.Sprintf(`{"amount":%d,"to":"bob"}`, n), RequiresApproval: true}
}

func origin() pipeline.Inbound {
	return pipeline.Inbound{Channel: "web", SenderID: "alice", MessageID: "m1", ThreadID: "t1"}
}

// proposeN proposes n more calls for turn "turn-1" (proposal pN asks
// for call cN), each posted as message "msg-<id>".
func proposeN(t *testing.T, s *ProposalsState, n int) {
	t.Helper()
	for range n {
		_, id := s.Propose(proposalEnv(0), "turn-1", toolCall(s.Seq+1), origin())
		posted := s.Delivered(proposalEnv(0), ChunkDelivered{TurnID: proposalKeyPrefix + id, Delivered: pipeline.Delivered{PlatformMessageID: "msg-" + id}})
		require.Equal(t, []Effect{Emit{ProposalPosted{TurnID: "turn-1"}}}, posted, "the turn hears its proposal is out")
	}
}

func approve(id, by string) pipeline.Decision {
	return pipeline.Decision{ID: id, Decision: pipeline.DecisionApprove, By: by}
}

func reject(id, by, reason string) pipeline.Decision {
	return pipeline.Decision{ID: id, Decision: pipeline.DecisionReject, By: by, Reason: reason}
}

// press runs a button press the way the session does: PressButton's
// event, answered by the loop's decision on s.
func press(s *ProposalsState, env Env, in pipeline.Inbound) []Effect {
	var out []Effect
	for _, e := range PressButton(env, in) {
		if emit, ok := e.(Emit); ok {
			if asked, ok := emit.Event.(DecisionAsked); ok {
				run := &session{st: &State{Proposals: *s}}
				out = append(out, run.decision(env, asked)...)
				*s = run.st.Proposals
				continue
			}
		}
		out = append(out, e)
	}
	return out
}

// noticesIn are the notices told to the presser alone.
func noticesIn(effects []Effect) []NoticeWanted {
	var out []NoticeWanted
	for _, e := range effects {
		if emit, ok := e.(Emit); ok {
			if n, ok := emit.Event.(NoticeWanted); ok {
				out = append(out, n)
			}
		}
	}
	return out
}

func decidedIn(effects []Effect) []ProposalDecided {
	var out []ProposalDecided
	for _, e := range effects {
		if emit, ok := e.(Emit); ok {
			if d, ok := emit.Event.(ProposalDecided); ok {
				out = append(out, d)
			}
		}
	}
	return out
}

func editsIn(effects []Effect) []pipeline.Edit {
	var out []pipeline.Edit
	for _, e := range effects {
		if c, ok := e.(Call); ok && c.Activity == pipeline.ActivityEdit {
			out = append(out, c.Args[0].(pipeline.Edit))
		}
	}
	return out
}

func armsIn(effects []Effect) []Arm {
	var out []Arm
	for _, e := range effects {
		if a, ok := e.(Arm); ok {
			out = append(out, a)
		}
	}
	return out
}

func (s *ProposalsState) proposal(t *testing.T, id string) Proposal {
	t.Helper()
	i := s.index(id)
	require.GreaterOrEqual(t, i, 0, "proposal %s is kept", id)
	return s.Proposals[i]
}

func TestADecisionReachesExactlyItsOwnProposal(t *testing.T) {
	tests := []struct {
		name    string
		decided int // p1..pN are proposed and approved first, one by one
		pending int // then this many more are proposed
		target  string
	}{
		{name: "the only proposal", pending: 1, target: "p1"},
		{name: "the last of several pending", pending: 5, target: "p5"},
		{name: "one in the middle after earlier ones were decided", decided: 4, pending: 4, target: "p6"},
		{name: "after pruning shifted the list", decided: keptProposals + 10, pending: 5, target: "p" + strconv.Itoa(keptProposals+13)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s ProposalsState
			for i := 1; i <= tt.decided; i++ {
				proposeN(t, &s, 1)
				require.NoError(t, s.Check(proposalEnv(0), approve("p"+strconv.Itoa(i), boss), false))
				require.NotEmpty(t, decidedIn(s.Decide(proposalEnv(0), approve("p"+strconv.Itoa(i), boss))))
			}
			proposeN(t, &s, tt.pending)
			before := map[string]Proposal{}
			for _, p := range s.Proposals {
				before[p.ID] = p
			}
			out := s.Decide(proposalEnv(time.Minute), reject(tt.target, boss, "too much"))
			want := s.proposal(t, tt.target)
			require.Equal(t, []ProposalDecided{{TurnID: "turn-1", ProposalID: tt.target, CallID: before[tt.target].Call.ID, Tool: "pay", DecidedBy: boss, Reason: "too much"}}, decidedIn(out))
			assert.Equal(t, ProposalRejected, want.Status)
			edits := editsIn(out)
			require.Len(t, edits, 1)
			assert.Equal(t, "msg-"+tt.target, edits[0].PlatformMessageID)
			assert.Contains(t, edits[0].Text, "["+tt.target+"]")
			for _, p := range s.Proposals {
				if p.ID != tt.target {
					assert.Equal(t, before[p.ID], p, "proposal %s is untouched", p.ID)
				}
			}
		})
	}
}

func TestRepeatedAndLateDecisionsAreAnswered(t *testing.T) {
	tests := []struct {
		name     string
		second   pipeline.Decision
		refusal  string // empty: answered without error
		answered string
	}{
		{name: "the same decision again (a double click)", second: approve("p1", boss), answered: "Proposal p1 approved by web:boss."},
		{name: "the contrary decision", second: reject("p1", boss, ""), refusal: "proposal p1 was already approved by web:boss"},
		{name: "another owner's decision", second: approve("p1", "operator:eve"), refusal: "proposal p1 was already approved by web:boss"},
		{name: "an unknown proposal", second: approve("p9", boss), refusal: `unknown proposal "p9"`},
		{name: "a malformed decision", second: pipeline.Decision{ID: "p1", Decision: "maybe", By: boss}, refusal: "decision must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s ProposalsState
			proposeN(t, &s, 2)
			require.NotEmpty(t, s.Decide(proposalEnv(0), approve("p1", boss)))
			decided := s.proposal(t, "p1")

			err := s.Check(proposalEnv(time.Second), tt.second, false)
			out, answer, updateErr := s.Update(proposalEnv(time.Second), tt.second)
			signalled := s.Decide(proposalEnv(time.Second), tt.second)
			assert.Equal(t, err, updateErr, "the update's handler refuses what its validator does")

			assert.Empty(t, out, "a repeat or a refusal changes nothing")
			assert.Empty(t, signalled)
			assert.Equal(t, decided, s.proposal(t, "p1"))
			if tt.refusal == "" {
				assert.NoError(t, err)
				assert.Equal(t, tt.answered, answer)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.refusal)
		})
	}
}

// TestACommandIsAnsweredInTheChat: /approve and /reject reach the loop
// as the sender's decision (the commands' tests show By is the sender's,
// whatever the command said); its answer, or its refusal, is a reply in
// the chat.
func TestACommandIsAnsweredInTheChat(t *testing.T) {
	var s ProposalsState
	proposeN(t, &s, 1)
	decide := func(asked DecisionAsked) []Effect {
		run := &session{st: &State{Proposals: s}}
		out := run.decision(proposalEnv(0), asked)
		s = run.st.Proposals
		return out
	}
	answers := func(effects []Effect) []AnswerWanted {
		var out []AnswerWanted
		for _, e := range effects {
			if emit, ok := e.(Emit); ok {
				if a, ok := emit.Event.(AnswerWanted); ok {
					out = append(out, a)
				}
			}
		}
		return out
	}
	out := decide(DecisionAsked{Decision: approve("p1", "web:mallory"), MessageID: "m1"})
	assert.Empty(t, decidedIn(out))
	assert.Equal(t, []AnswerWanted{{MessageID: "m1", Text: "⚠️ web:mallory is not allowed to decide proposal p1: only owners may"}}, answers(out))

	out = decide(DecisionAsked{Decision: reject("p1", "web:carol", "later"), OwnerVerified: true, MessageID: "m2"})
	assert.Len(t, decidedIn(out), 1)
	assert.Equal(t, []AnswerWanted{{MessageID: "m2", Text: "Proposal p1 rejected by web:carol."}}, answers(out))
	assert.Equal(t, "later", s.proposal(t, "p1").Reason)
}

func TestAnExpiredProposalRefusesALateDecision(t *testing.T) {
	var s ProposalsState
	proposeN(t, &s, 1)
	s.Fired(proposalEnv(time.Hour))
	err := s.Check(proposalEnv(time.Hour+time.Second), approve("p1", boss), false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "already expired by its deadline")
}

func TestOnlyOwnersOperatorsAndAllowedRequestersDecide(t *testing.T) {
	tests := []struct {
		name          string
		by            string
		owners        []string
		requesterMay  bool
		ownerVerified bool
		allowed       bool
	}{
		{name: "an owner listed in the settings", by: boss, allowed: true},
		{name: "anyone when the owners are *", by: "web:mallory", owners: []string{"*"}, allowed: true},
		{name: "an operator", by: "operator:eve", allowed: true},
		{name: "an owner the adapter verified", by: "web:carol", ownerVerified: true, allowed: true},
		{name: "the requester when the settings allow it", by: "web:alice", requesterMay: true, allowed: true},
		{name: "the requester otherwise", by: "web:alice"},
		{name: "a stranger", by: "web:mallory"},
		{name: "a stranger when requesters may decide", by: "web:mallory", requesterMay: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s ProposalsState
			proposeN(t, &s, 1)
			env := proposalEnv(time.Second)
			if tt.owners != nil {
				env.Settings.Owners = tt.owners
			}
			env.Settings.RequesterMayDecide = tt.requesterMay
			err := s.Check(env, approve("p1", tt.by), tt.ownerVerified)
			assert.Equal(t, tt.allowed, err == nil, "check: %v", err)
			assert.Equal(t, ProposalPending, s.proposal(t, "p1").Status, "Check changes nothing")

			// An operator presses no buttons; its press stands for
			// a sender of a provider named "operator".
			channel, sender, _ := strings.Cut(tt.by, ":")
			pressed := pipeline.Inbound{Channel: channel, SenderID: sender, MessageID: "press-1", ReplyTo: "msg-p1", ThreadID: "t1",
				Action: "approve:p1", ReplyToken: "token-1", SenderIsOwner: tt.ownerVerified}
			out := press(&s, env, pressed)
			if tt.allowed {
				assert.Equal(t, ProposalApproved, s.proposal(t, "p1").Status)
				assert.Len(t, decidedIn(out), 1)
				return
			}
			assert.Equal(t, ProposalPending, s.proposal(t, "p1").Status)
			require.Len(t, out, 1, "a refused press only tells the presser")
			refusal := noticesIn(out)
			require.Len(t, refusal, 1)
			assert.Equal(t, sender, refusal[0].To)
			assert.Equal(t, "token-1", refusal[0].Via)
			assert.Equal(t, "msg-p1", refusal[0].MessageID, "told under the proposal message")
			assert.Contains(t, refusal[0].Text, "is not allowed to decide proposal p1")
		})
	}
}

// TestAPerSenderSessionsButtonsNameItsSender: the owner's press on the
// buttons of ana's session decides ana's p1, the call on screen.
func TestAPerSenderSessionsButtonsNameItsSender(t *testing.T) {
	env := proposalEnv(0)
	env.Key.Sender = "ana"
	var s ProposalsState
	out, id := s.Propose(env, "turn-1", toolCall(1), origin())
	require.Equal(t, "p1", id)
	post := out[0].(Deliver)
	assert.Equal(t, []pipeline.Button{{Text: "Approve", Action: "approve:p1@ana"}, {Text: "Reject", Action: "reject:p1@ana"}}, post.Delivery.Buttons)
	s.Delivered(env, ChunkDelivered{TurnID: "proposal/p1", Delivered: pipeline.Delivered{PlatformMessageID: "42"}})

	other := env
	other.Key.Sender = "ben"
	pressed := pipeline.Inbound{Channel: "web", SenderID: "boss", MessageID: "press-1", ReplyTo: "42", Action: post.Delivery.Buttons[0].Action}
	refused := press(&s, other, pressed)
	require.Len(t, refused, 1, "ben's session refuses a press on ana's proposal")
	assert.Contains(t, noticesIn(refused)[0].Text, "this button is for proposal p1 of session session:web:a:c:~ana")
	assert.Equal(t, ProposalPending, s.proposal(t, "p1").Status)

	env.Now = env.Now.Add(time.Second)
	out = press(&s, env, pressed)
	assert.Equal(t, []ProposalDecided{{TurnID: "turn-1", ProposalID: "p1", CallID: "c1", Tool: "pay", Approved: true, DecidedBy: boss}}, decidedIn(out))
	edits := editsIn(out)
	require.Len(t, edits, 1)
	assert.Equal(t, "42", edits[0].PlatformMessageID)
	assert.Equal(t, "✅ Approved by web:boss [p1]: pay (amount=1, to=bob)", edits[0].Text)
}

func TestAnUnknownButtonActionIsIgnored(t *testing.T) {
	var s ProposalsState
	proposeN(t, &s, 1)
	assert.Empty(t, press(&s, proposalEnv(0), pipeline.Inbound{Channel: "web", SenderID: "boss", Action: "launch:p1"}))
	assert.Equal(t, ProposalPending, s.proposal(t, "p1").Status)
}

func TestProposalsExpireOnOneSharedTimer(t *testing.T) {
	var s ProposalsState
	var arms []Arm
	for i, ttl := range []time.Duration{time.Hour, 30 * time.Minute, 2 * time.Hour} {
		env := proposalEnv(0)
		env.Settings.ProposalTTL = pipeline.Duration(ttl)
		out, _ := s.Propose(env, "turn-1", toolCall(i+1), origin())
		arms = append(arms, armsIn(out)...)
	}
	require.Len(t, arms, 2, "armed at the first expiry, moved once to an earlier one")
	for _, a := range arms {
		assert.Equal(t, proposalsTimer, a.Timer)
	}
	assert.Equal(t, t0.Add(30*time.Minute), arms[1].At)

	out := s.Fired(proposalEnv(30 * time.Minute))
	require.Equal(t, []ProposalDecided{{TurnID: "turn-1", ProposalID: "p2", CallID: "c2", Tool: "pay", Expired: true, Reason: "expired"}}, decidedIn(out))
	assert.Equal(t, ProposalExpired, s.proposal(t, "p2").Status)
	require.Len(t, armsIn(out), 1)
	assert.Equal(t, t0.Add(time.Hour), armsIn(out)[0].At, "moved to the next expiry")

	out = s.Decide(proposalEnv(40*time.Minute), approve("p1", boss))
	assert.Equal(t, t0.Add(2*time.Hour), armsIn(out)[0].At)
	assert.Empty(t, armsIn(s.Decide(proposalEnv(41*time.Minute), approve("p1", boss))), "a repeat moves nothing")

	out = s.Decide(proposalEnv(50*time.Minute), reject("p3", boss, ""))
	assert.Contains(t, out, Effect(Disarm{Timer: proposalsTimer}), "nothing waits: the timer goes")
	assert.True(t, s.ExpiryArmedAt.IsZero())
	assert.Equal(t, 0, s.Pending())
}

func TestResumeArmsTheExpiryTimerAgain(t *testing.T) {
	var s ProposalsState
	proposeN(t, &s, 2)
	out := s.Resume(proposalEnv(time.Minute))
	require.Equal(t, []Effect{Arm{Timer: proposalsTimer, At: t0.Add(time.Hour), Summary: "expire proposals (2 pending)"}}, out)
}

func TestADecidedProposalKeepsNoArguments(t *testing.T) {
	tests := []struct {
		name   string
		settle func(s *ProposalsState) []Effect
	}{
		{name: "approved", settle: func(s *ProposalsState) []Effect { return s.Decide(proposalEnv(0), approve("p1", boss)) }},
		{name: "rejected", settle: func(s *ProposalsState) []Effect { return s.Decide(proposalEnv(0), reject("p1", boss, "no")) }},
		{name: "expired", settle: func(s *ProposalsState) []Effect { return s.Fired(proposalEnv(time.Hour)) }},
		{name: "withdrawn", settle: func(s *ProposalsState) []Effect { return s.Withdraw(proposalEnv(0), "turn-1", "the turn was aborted") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s ProposalsState
			proposeN(t, &s, 1)
			assert.Equal(t, toolCall(1).Arguments, s.proposal(t, "p1").Call.Arguments, "a pending proposal keeps them")
			require.NotEmpty(t, decidedIn(tt.settle(&s)))
			p := s.proposal(t, "p1")
			assert.Empty(t, p.Call.Arguments)
			assert.Equal(t, "amount=1, to=bob", p.Summary, "the summary still shows what was asked")
		})
	}
}

func TestKeptDecidedProposalsAreBoundedEarliestDecidedFirst(t *testing.T) {
	const round = 30 // two rounds decide more than keptProposals
	var s ProposalsState
	// Each round is decided newest first, so the earliest proposed of a
	// round are decided last.
	for r := range 2 {
		proposeN(t, &s, round)
		for i := round * (r + 1); i > round*r; i-- {
			require.NotEmpty(t, decidedIn(s.Decide(proposalEnv(0), approve("p"+strconv.Itoa(i), boss))))
		}
	}
	proposeN(t, &s, 3)
	assert.Len(t, s.Proposals, keptProposals+3, "every pending one and the bound of decided ones")
	assert.Equal(t, 3, s.Pending())
	// The first ten decided (p30..p21) are forgotten, though proposed
	// after p1..p20.
	for _, id := range []string{"p1", "p20", "p31", "p60"} {
		assert.NoError(t, s.Check(proposalEnv(0), approve(id, boss), false), "%s answers a repeat", id)
	}
	for _, id := range []string{"p21", "p30"} {
		assert.ErrorContains(t, s.Check(proposalEnv(0), approve(id, boss), false), "unknown proposal", "%s is forgotten", id)
	}
	assert.Equal(t, ProposalPending, s.proposal(t, "p63").Status, "pending ones are never pruned")
}

func TestTheProposalMessageIsPostedAndShowsTheOutcome(t *testing.T) {
	var s ProposalsState
	env := proposalEnv(0)
	out, id := s.Propose(env, "turn-1", toolCall(1), origin())
	require.Equal(t, "p1", id)
	require.IsType(t, Deliver{}, out[0])
	post := out[0].(Deliver)
	assert.Equal(t, "proposal/p1", post.TurnID)
	assert.True(t, ProposalKey(post.TurnID))
	assert.Equal(t, env.Key.WorkflowID()+"/proposal/turn-1/p1", post.Delivery.IdempotencyKey)
	assert.Equal(t, "m1", post.Delivery.ReplyTo)
	assert.Equal(t, "t1", post.Delivery.ThreadID)
	assert.Equal(t, []pipeline.Button{{Text: "Approve", Action: "approve:p1"}, {Text: "Reject", Action: "reject:p1"}}, post.Delivery.Buttons)
	assert.Contains(t, out, Effect(Publish{}))
	assert.Equal(t, 1, s.Pending())

	require.Equal(t, []Effect{Emit{ProposalPosted{TurnID: "turn-1"}}}, s.Delivered(env, ChunkDelivered{TurnID: "proposal/p1", Delivered: pipeline.Delivered{PlatformMessageID: "42"}}))
	out = s.Decide(proposalEnv(time.Minute), approve("p1", boss))
	edits := editsIn(out)
	require.Len(t, edits, 1)
	assert.Equal(t, pipeline.Edit{Session: env.Key, PlatformMessageID: "42", ThreadID: "t1", Text: "✅ Approved by web:boss [p1]: pay (amount=1, to=bob)"}, edits[0])
	assert.Equal(t, Count{Name: workflows.MetricProposals, Tags: map[string]string{"outcome": ProposalApproved}}, out[0])
	assert.True(t, ProposalKey(out[1].(Call).Key))
	assert.Empty(t, s.Edited(env, Returned{Key: out[1].(Call).Key, Failure: &Failure{Type: "PlatformRejected"}}))
}

func TestADecisionBeforeTheMessageIsOutEditsItOnceOut(t *testing.T) {
	var s ProposalsState
	s.Propose(proposalEnv(0), "turn-1", toolCall(1), origin())
	out := s.Decide(proposalEnv(time.Second), reject("p1", boss, "no"))
	assert.Empty(t, editsIn(out), "nothing to edit yet")
	assert.Len(t, decidedIn(out), 1)
	out = s.Delivered(proposalEnv(2*time.Second), ChunkDelivered{TurnID: "proposal/p1", Delivered: pipeline.Delivered{PlatformMessageID: "42"}})
	edits := editsIn(out)
	require.Len(t, edits, 1)
	assert.Equal(t, "42", edits[0].PlatformMessageID)
	assert.Nil(t, edits[0].Buttons)
}

func TestAProposalThatCouldNotBePostedIsRejected(t *testing.T) {
	var s ProposalsState
	s.Propose(proposalEnv(0), "turn-1", toolCall(1), origin())
	out := s.Delivered(proposalEnv(time.Minute), ChunkDelivered{TurnID: "proposal/p1", Failure: &Failure{Type: "PlatformRejected", Message: "no such chat"}})
	require.Equal(t, []ProposalDecided{{TurnID: "turn-1", ProposalID: "p1", CallID: "c1", Tool: "pay", DecidedBy: sessionDecider, Reason: "the proposal could not be posted"}}, decidedIn(out))
	assert.Empty(t, editsIn(out))
	assert.Contains(t, out, Effect(Disarm{Timer: proposalsTimer}))
	assert.Empty(t, s.Delivered(proposalEnv(time.Minute), ChunkDelivered{TurnID: "proposal/p1/refusal-1", Failure: &Failure{Type: "Timeout"}}), "a lost refusal changes nothing")
}

func TestProposalsPastTheBoundAreRejectedUnposted(t *testing.T) {
	var s ProposalsState
	proposeN(t, &s, maxPendingProposals)
	out, id := s.Propose(proposalEnv(0), "turn-1", toolCall(99), origin())
	for _, e := range out {
		assert.NotEqual(t, fmt.Sprintf("%T", Deliver{}), fmt.Sprintf("%T", e), "not posted")
	}
	require.Len(t, decidedIn(out), 1)
	assert.Equal(t, id, decidedIn(out)[0].ProposalID)
	assert.False(t, decidedIn(out)[0].Approved)
	assert.Equal(t, maxPendingProposals, s.Pending())
}

func TestWithdrawRejectsOnlyThatTurnsPendingProposals(t *testing.T) {
	var s ProposalsState
	proposeN(t, &s, 2) // turn-1
	s.Propose(proposalEnv(0), "turn-2", toolCall(3), origin())
	s.Decide(proposalEnv(0), approve("p1", boss))
	out := s.Withdraw(proposalEnv(time.Second), "turn-1", "the turn was aborted")
	require.Equal(t, []ProposalDecided{{TurnID: "turn-1", ProposalID: "p2", CallID: "c2", Tool: "pay", DecidedBy: sessionDecider, Reason: "the turn was aborted"}}, decidedIn(out))
	assert.Len(t, editsIn(out), 1, "its buttons go")
	assert.Equal(t, ProposalApproved, s.proposal(t, "p1").Status)
	assert.Equal(t, ProposalPending, s.proposal(t, "p3").Status)
}

func TestWhatTheModelReadsOfARefusedCall(t *testing.T) {
	tests := []struct {
		name    string
		decided ProposalDecided
		refused bool
		output  string
	}{
		{name: "approved", decided: ProposalDecided{CallID: "c1", Tool: "pay", Approved: true}},
		{name: "rejected with a reason", decided: ProposalDecided{CallID: "c1", Tool: "pay", DecidedBy: boss, Reason: "too much"}, refused: true,
			output: "The user rejected this call (web:boss): too much. It was not run."},
		{name: "rejected", decided: ProposalDecided{CallID: "c1", Tool: "pay", DecidedBy: boss}, refused: true,
			output: "The user rejected this call (web:boss). It was not run."},
		{name: "expired", decided: ProposalDecided{CallID: "c1", Tool: "pay", Expired: true, Reason: "expired"}, refused: true,
			output: "Nobody approved this call in time (expired). It was not run."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, refused := tt.decided.Refused()
			require.Equal(t, tt.refused, refused)
			if refused {
				assert.Equal(t, pipeline.ToolResult{CallID: "c1", Name: "pay", IsError: true, Output: tt.output}, res)
			}
		})
	}
}

// TestADecisionsReasonAndDeciderAreKeptCut: the decider writes the reason
// (a /reject command takes a whole message), and an operator names
// themself; a decided proposal keeps, shows and tells the turn both cut
// to their bounds on a character, so the keptProposals decided ones stay
// small in the state the run carries.
func TestADecisionsReasonAndDeciderAreKeptCut(t *testing.T) {
	long := strings.Repeat("no", pipeline.MaxTextBytes/2)
	tests := []struct {
		name       string
		by, reason string
		keptBy     string
		keptReason string
	}{
		{name: "a whole message's reason", by: boss, reason: long,
			keptBy: boss, keptReason: long[:maxReasonBytes-len("…")] + "…"},
		{name: "a reason of two-byte characters, cut on one", by: boss, reason: "a" + strings.Repeat("ж", pipeline.MaxTextBytes/2-1),
			keptBy: boss, keptReason: "a" + strings.Repeat("ж", (maxReasonBytes-len("…")-1)/2) + "…"},
		{name: "an operator's long name", by: "operator:" + strings.Repeat("e", pipeline.MaxTextBytes), reason: "too much",
			keptBy: "operator:" + strings.Repeat("e", maxDeciderBytes-len("operator:")-len("…")) + "…", keptReason: "too much"},
		{name: "a reason at the bound", by: boss, reason: strings.Repeat("n", maxReasonBytes),
			keptBy: boss, keptReason: strings.Repeat("n", maxReasonBytes)},
	}
	paths := []struct {
		name   string
		decide func(s *ProposalsState, d pipeline.Decision) []Effect
	}{
		{name: "command", decide: func(s *ProposalsState, d pipeline.Decision) []Effect {
			run := &session{st: &State{Proposals: *s}}
			out := run.decision(proposalEnv(time.Second), DecisionAsked{Decision: d, OwnerVerified: true, MessageID: "m2"})
			*s = run.st.Proposals
			return out
		}},
		{name: "signal", decide: func(s *ProposalsState, d pipeline.Decision) []Effect { return s.Decide(proposalEnv(time.Second), d) }},
		{name: "update", decide: func(s *ProposalsState, d pipeline.Decision) []Effect {
			out, _, err := s.Update(proposalEnv(time.Second), d)
			require.NoError(t, err)
			return out
		}},
	}
	for _, tt := range tests {
		for _, path := range paths {
			t.Run(tt.name+" by "+path.name, func(t *testing.T) {
				var s ProposalsState
				proposeN(t, &s, 1)
				d := reject("p1", tt.by, tt.reason)
				out := path.decide(&s, d)
				decided, edits := decidedIn(out), editsIn(out)
				require.Len(t, decided, 1)
				require.Len(t, edits, 1)
				assert.True(t, strings.HasSuffix(edits[0].Text, "\nReason: "+tt.keptReason), "the message shows what is kept")

				p := s.proposal(t, "p1")
				assert.Equal(t, tt.keptBy, p.DecidedBy)
				assert.Equal(t, tt.keptReason, p.Reason)
				assert.LessOrEqual(t, len(p.Reason), maxReasonBytes)
				assert.LessOrEqual(t, len(p.DecidedBy), maxDeciderBytes)
				assert.Equal(t, tt.keptBy, decided[0].DecidedBy, "the turn hears what is kept")
				assert.Equal(t, tt.keptReason, decided[0].Reason)
				res, _ := decided[0].Refused()
				assert.Equal(t, "The user rejected this call ("+tt.keptBy+"): "+tt.keptReason+". It was not run.", res.Output)

				again, answer, err := s.Update(proposalEnv(2*time.Second), d)
				require.NoError(t, err, "the same decision again is a repeat, however long its decider")
				assert.Empty(t, again)
				assert.Equal(t, "Proposal p1 rejected by "+tt.by+".", answer)
			})
		}
	}
}

// TestADeciderKeptWholeByAnEarlierRunStillRepeats: state an earlier run
// carried may hold a decider longer than maxDeciderBytes; the same
// decision again is still a repeat.
func TestADeciderKeptWholeByAnEarlierRunStillRepeats(t *testing.T) {
	var s ProposalsState
	proposeN(t, &s, 1)
	by := "operator:" + strings.Repeat("e", 2*maxDeciderBytes)
	s.Proposals[0].Status, s.Proposals[0].DecidedBy, s.Proposals[0].Reason = ProposalRejected, by, strings.Repeat("no", maxReasonBytes)
	out, answer, err := s.Update(proposalEnv(time.Second), reject("p1", by, ""))
	require.NoError(t, err)
	assert.Empty(t, out)
	assert.Equal(t, "Proposal p1 rejected by "+by+".", answer)
}
