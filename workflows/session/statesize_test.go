package session

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

// payloadLimit is the Temporal server's default limit on one payload (the
// continue-as-new input is one): past it the run cannot continue.
const payloadLimit = 2 << 20

// Sizes the code gives no bound of its own, at what the audit takes them
// to be. Each is named in stateBounds where it is used.
const (
	// assumedChainModels and assumedModelBytes: the configured model
	// chain (REPLYFLOW_MODELS) is the operator's, with no limit on its
	// length or its names.
	assumedChainModels = 8
	assumedModelBytes  = 128
	// assumedReplyBytes: a direct reply is an answer the code writes
	// (a command's, a notice), a few lines.
	assumedReplyBytes = 4 << 10
	// assumedPlatformIDBytes: the IDs platforms give the session's own
	// messages are kept as they come (Telegram's, Slack's, Discord's and
	// the web chat's are shorter).
	assumedPlatformIDBytes = 32
	// assumedPeerBotTurns: the loop guard keeps the engaged peer-bot
	// turns of the last pipeline.PeerBotWindow, however many came.
	assumedPeerBotTurns = 600
)

// stateBound is what bounds one collection of State.
type stateBound struct {
	// by names the bound: a constant of the code, or an assumed* size
	// where the code states none.
	by string
	// holdsRun: the run does not continue as new while the collection
	// is not empty (quiet, mayCarry in run.go), so continue-as-new never
	// carries it; the audit fills it all the same.
	holdsRun bool
}

// stateBounds lists every slice and map reachable from State, by the
// struct type and field that hold it, with the bound that keeps it
// small. TestEveryCollectionOfStateIsAudited keeps the list whole, and
// TestLargestStateFitsInOnePayload fills each to its bound.
var stateBounds = map[string]stateBound{
	"session.IntakeState.Seen":    {by: "seenCapacity IDs of at most maxSeenIDBytes (longer ones are hashed)"},
	"session.IntakeState.Buffers": {by: "maxOpenBuffers"},
	"session.Buffer.Messages":     {by: "maxBufferedMessages, maxBufferedBytes (the window closes at either)"},
	"pipeline.Inbound.Media":      {by: "pipeline.MaxMedia (Inbound.Validate); their bytes count in Inbound.Size"},

	"session.EngagementState.Participants": {by: "maxParticipants"},
	"session.EngagementState.Sticky":       {by: "maxParticipants (GrantSticky)"},
	"session.EngagementState.Observed":     {by: "pipeline.ContextBufferSize messages of maxObservedBytes"},
	"pipeline.LoopGuard.Recent":            {by: "no count: the turns of the last pipeline.PeerBotWindow (assumedPeerBotTurns)"},
	"session.EngagementState.BotThreads":   {by: "maxBotThreads"},
	"session.EngagementState.GateBuffer":   {by: "maxBufferedMessages, maxBufferedBytes (the batch goes to the gate at either)"},
	"session.EngagementState.GateCalls":    {by: "maxGateCalls", holdsRun: true},
	"session.GateCall.Batch":               {by: "one gated batch (maxBufferedMessages, maxBufferedBytes)", holdsRun: true},

	"session.QueueState.Queue":   {by: "maxQueuedBytes and the cap (at most pipeline.MaxQueueCap batches); a lone batch is kept whatever its size"},
	"session.Batch.Messages":     {by: "maxQueuedBytes (the queue's); one batch is a debounce window, a gated batch or what was steered (maxSteeredBytes)"},
	"session.Overflow.Summaries": {by: "maxOverflowLines lines of pipeline.SummaryMaxRunes"},
	"session.Overflow.Refs":      {by: "maxOverflowLines"},

	"session.TurnState.Deliveries":      {by: "maxDeliveries"},
	"session.ActiveTurn.Messages":       {by: "maxCarriedTurnBytes (the whole carried turn, Carriable)"},
	"session.ActiveTurn.Refs":           {by: "maxCarriedTurnBytes"},
	"session.ActiveTurn.Rounds":         {by: "maxCarriedTurnBytes"},
	"pipeline.ToolRound.Calls":          {by: "maxCarriedTurnBytes"},
	"pipeline.ToolRound.Results":        {by: "maxCarriedTurnBytes"},
	"session.ActiveTurn.Decisions":      {by: "maxCarriedTurnBytes"},
	"session.ActiveTurn.Steered":        {by: "maxSteered, maxSteeredBytes; maxCarriedTurnBytes"},
	"session.ActiveTurn.SteeredBacklog": {by: "maxSteered, maxSteeredBytes; maxCarriedTurnBytes"},
	"session.ActiveTurn.Chunks":         {by: "maxCarriedTurnBytes"},
	"pipeline.Shown.Blocks":             {by: "pipeline.MaxStreamBlocks; maxCarriedTurnBytes"},
	"session.StepAttempts.Failed":       {by: "maxRecordedFailures; maxCarriedTurnBytes"},
	"session.StepAttempts.Models":       {by: "the configured chain (assumedChainModels); maxCarriedTurnBytes"},
	"session.StepAttempts.Candidates":   {by: "the configured chain (assumedChainModels); maxCarriedTurnBytes"},
	"session.TurnRecord.MessageIDs":     {by: "the refs a turn starts with: its messages (maxQueuedBytes of them) and the overflow's (maxOverflowLines)"},
	"session.TurnRecord.Fallback":       {by: "maxRecordedFailures"},
	"session.ModelsState.Cooldowns":     {by: "one per model of the configured chain (assumedChainModels), the /model choice and a turn's directive"},

	"session.ReactionsState.Reactions":    {by: "maxReactions"},
	"session.ReactionsState.Changes":      {by: "one per tracked message (maxReactions), and the one being applied"},
	"session.CarriedReactions.Changes":    {by: "one per ref of the last reply's turn that Carry takes: the tracked ones (maxReactions), and the others only while fewer are tracked"},
	"session.LastChunkReady.Refs":         {by: "the turn's refs", holdsRun: true},
	"pipeline.Delivery.Buttons":           {by: "a proposal's two buttons", holdsRun: true},
	"pipeline.Delivery.ThenReact":         {by: "the turn's refs", holdsRun: true},
	"session.ProposalsState.Proposals":    {by: "keptProposals decided (without arguments, deciders of maxDeciderBytes, reasons of maxReasonBytes) and maxPendingProposals pending (the carried turn's calls)"},
	"session.RepliesState.Replies":        {by: "maxPendingReplies of assumedReplyBytes", holdsRun: true},
	"session.RepliesState.Calls":          {by: "maxCallsUnderWay", holdsRun: true},
	"session.Compaction.Models":           {by: "the configured chain (assumedChainModels)", holdsRun: true},
	"session.Compaction.Failed":           {by: "one per model of the chain", holdsRun: true},
	"session.ControlState.HeartbeatTicks": {by: "heartbeatTicksKept"},
	"session.ControlState.Ticks":          {by: "heartbeatTicksKept", holdsRun: true},
}

// stateFiller makes the largest values the limits allow: IDs and names
// at their maximum length, texts filling a byte budget.
type stateFiller struct {
	now time.Time
	key pipeline.SessionKey
}

func newStateFiller() stateFiller {
	f := stateFiller{now: time.Date(2026, 11, 26, 12, 0, 0, 123456789, time.UTC)}
	f.key = pipeline.SessionKey{Channel: "telegram", Account: f.id("acct", 0), Chat: f.id("chat", 0), Sender: f.id("sender", 0)}
	return f
}

func (stateFiller) id(prefix string, i int) string {
	s := fmt.Sprintf("%s-%d-", prefix, i)
	return s + strings.Repeat("x", pipeline.MaxIDBytes-len(s))
}

// platformID is an ID a platform gave a message of the session's.
func (stateFiller) platformID(prefix string, i int) string {
	s := fmt.Sprintf("%s-%d-", prefix, i)
	return s + strings.Repeat("x", max(assumedPlatformIDBytes-len(s), 0))
}

// text is n bytes of a letter JSON keeps as it is. A character JSON
// escapes (<, >, & and control characters) takes six bytes in the
// payload, which the byte bounds (Inbound.Size) count as one.
func (stateFiller) text(n int) string { return strings.Repeat("y", max(n, 0)) }

func (stateFiller) name() string { return strings.Repeat("n", pipeline.MaxNameBytes) }

func (f stateFiller) who(i int) string { return f.key.Channel + ":" + f.id("sender", i) }

// turnID is a turn's ID as Begin makes it: the chain's first run ID (a
// UUID) and the turn's number.
func (stateFiller) turnID(i int) string {
	return fmt.Sprintf("%s.%d", "0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d", 1_000_000+i)
}

// tick is a heartbeat tick's ID: its schedule's workflow ID and the
// scheduled time the server appends.
func (f stateFiller) tick(i int) string {
	return fmt.Sprintf("%s-%s", pipeline.HeartbeatTickID(f.key), f.now.Add(time.Duration(i)*time.Hour).Format(time.RFC3339))
}

func (f stateFiller) model(i int) string {
	s := fmt.Sprintf("openai/m%d-", i)
	return s + strings.Repeat("m", assumedModelBytes-len(s))
}

func (f stateFiller) chain() []string {
	out := make([]string, assumedChainModels)
	for i := range out {
		out[i] = f.model(i)
	}
	return out
}

// message is a message with every field at its longest and size bytes
// of text.
func (f stateFiller) message(prefix string, i, size int) pipeline.Inbound {
	return pipeline.Inbound{
		Channel: f.key.Channel, Account: f.key.Account, ChatID: f.key.Chat, ChatType: pipeline.ChatGroup,
		MessageID: f.id(prefix, i), SenderID: f.id("sender", i), SenderName: f.name(),
		ThreadID: f.id("thread", i), ReplyTo: f.id("reply", i), Text: f.text(size),
		Media:      []pipeline.Media{{Kind: "document", Ref: f.id("file", i), MimeType: "application/octet-stream", Name: f.name()}},
		ReplyToken: strings.Repeat("r", pipeline.MaxReplyTokenBytes), ReceivedAt: f.now,
		Membership: &pipeline.MembershipCount{Humans: 1000, FetchedAt: f.now},
	}
}

// messages fills a budget of bytes (as sizeOf counts them) with at most
// count messages, the text taking what the rest leaves.
func (f stateFiller) messages(prefix string, budget, count int) []pipeline.Inbound {
	overhead := f.message(prefix, 0, 0).Size()
	per := max(budget/count, overhead+1)
	var out []pipeline.Inbound
	for i := 0; i < count && sizeOf(out)+per <= budget; i++ {
		out = append(out, f.message(prefix, i, per-overhead))
	}
	return out
}

func (f stateFiller) change(id, thread string) pipeline.ReactionChange {
	return pipeline.ReactionChange{Session: f.key, MessageID: id, ThreadID: thread, State: pipeline.ReactionWaitingUser, Attempt: reactionRetries}
}

// largestState is State with every collection at its bound, filled with
// the largest items the limits allow. carried leaves empty what holds the
// run (stateBound.holdsRun), as continue-as-new carries it.
func largestState(t *testing.T, carried bool) *State {
	f := newStateFiller()
	st := &State{}
	fillIntake(f, &st.Intake)
	fillEngagement(f, &st.Engagement, carried)
	fillQueue(f, &st.Queue)
	fillTurn(t, f, &st.Turn)
	fillReactions(f, &st.Reactions, st.Turn.Active, carried)
	fillProposals(f, &st.Proposals)
	fillReplies(f, &st.Replies, carried)
	fillControl(f, &st.Control, carried)
	return st
}

func fillIntake(f stateFiller, s *IntakeState) {
	for i := range seenCapacity {
		id := fmt.Sprintf("seen-%d-", i)
		s.Seen = append(s.Seen, SeenMessage{ID: id + strings.Repeat("x", maxSeenIDBytes-len(id)), At: f.now})
	}
	for i := range maxOpenBuffers {
		s.Buffers = append(s.Buffers, Buffer{
			Key:      pipeline.BufferKey{Sender: f.id("sender", i), Thread: pipeline.ThreadKey(f.id("thread", i))},
			Messages: f.messages(fmt.Sprintf("buf%d", i), maxBufferedBytes, maxBufferedMessages), FirstAt: f.now, FlushAt: f.now, Gen: i,
		})
	}
	s.BufferSeq = 1 << 40
	s.QueueOverride = queuePatch()
	s.LastInboundAt = f.now
}

func queuePatch() *pipeline.QueuePatch {
	mode, drop, queueCap, debounce := pipeline.QueueSteerBacklog, pipeline.DropSummarize, pipeline.MaxQueueCap, pipeline.Duration(time.Hour+time.Nanosecond)
	return &pipeline.QueuePatch{Mode: &mode, Debounce: &debounce, Cap: &queueCap, Drop: &drop}
}

func fillEngagement(f stateFiller, s *EngagementState, carried bool) {
	for i := range maxParticipants {
		s.Participants = append(s.Participants, Participant{ID: f.who(i), Name: f.name(), IsBot: true, LastSeen: f.now})
		s.Sticky = append(s.Sticky, pipeline.StickyCredit{Author: f.who(i), Expires: f.now})
	}
	for range pipeline.ContextBufferSize {
		s.Observed = append(s.Observed, pipeline.Observed{Sender: f.name(), Text: f.text(maxObservedBytes), At: f.now})
	}
	s.LoopGuard = pipeline.LoopGuard{SinceHuman: 1 << 40, Active: true}
	for range assumedPeerBotTurns {
		s.LoopGuard.Recent = append(s.LoopGuard.Recent, f.now)
	}
	for i := range maxBotThreads {
		s.BotThreads = append(s.BotThreads, f.id("thread", i))
	}
	s.DisengagedTurn, s.ActivationOverride, s.LastDenied = f.turnID(0), pipeline.ActivationSmart, f.id("denied", 0)
	s.Membership = &pipeline.MembershipCount{Humans: 1000, Truncated: true, FetchedAt: f.now}
	s.GateBuffer = f.messages("gate", maxBufferedBytes, maxBufferedMessages)
	s.GateFirstAt, s.GateFlushAt, s.GateSeq = f.now, f.now, 1<<40
	if !carried {
		for i := range maxGateCalls {
			s.GateCalls = append(s.GateCalls, GateCall{Gen: i, Batch: f.messages(fmt.Sprintf("gate%d", i), maxBufferedBytes, maxBufferedMessages)})
		}
	}
}

// fillQueue fills the queue's byte bound in batches that carry every
// directive.
func fillQueue(f stateFiller, s *QueueState) {
	const batches = 8
	model, think, usage, verbose := f.model(0), pipeline.ThinkHigh, pipeline.UsageFull, true
	for i := range batches {
		s.Queue = append(s.Queue, Batch{
			Messages: f.messages(fmt.Sprintf("q%d", i), maxQueuedBytes/batches, maxBufferedMessages),
			Queue:    pipeline.QueueSettings{Mode: pipeline.QueueSteerBacklog, Debounce: pipeline.Duration(time.Hour + time.Nanosecond), Cap: pipeline.MaxQueueCap, Drop: pipeline.DropSummarize},
			Queued:   true, NoAnchor: true,
			Directives: &pipeline.Directives{Think: &think, Verbose: &verbose, Model: &model, Queue: queuePatch(), Usage: &usage},
		})
	}
	s.Overflow = &Overflow{Dropped: 1 << 40}
	for i := range maxOverflowLines {
		// Four-byte runes: the longest line SummaryLine makes.
		s.Overflow.Summaries = append(s.Overflow.Summaries, pipeline.SummaryLine(f.name(), strings.Repeat("😀", pipeline.SummaryMaxRunes)))
		s.Overflow.Refs = append(s.Overflow.Refs, msgRef{ID: f.id("over", i), Thread: f.id("thread", i)})
	}
	s.AbortedLastRun, s.NewTranscript = true, true
}

// fillTurn fills the running turn to the most continue-as-new carries
// (maxCarriedTurnBytes), with something in each of its collections and
// as many messages as it can hold, and the rest of the turn part to its
// bounds.
func fillTurn(t *testing.T, f stateFiller, s *TurnState) {
	turn := f.turnID(0)
	a := &ActiveTurn{
		TurnID: turn, Messages: []pipeline.Inbound{f.message("active", 0, 1<<10)}, Phase: PhaseWaiting, Step: 1 << 20,
		NoAnchor: true, Heartbeat: f.tick(0), NewTranscript: true, ShowsWaiting: true, Cut: true, Next: 1 << 20, Slow: true,
		Options: TurnOptions{Think: pipeline.ThinkHigh, Verbose: true, Usage: pipeline.UsageFull, Model: f.model(0), Muted: true, ThinkNote: true},
		Steered: []pipeline.Inbound{f.message("steered", 0, 1<<10)}, SteeredBacklog: []pipeline.Inbound{f.message("backlog", 0, 1<<10)},
		Waiting: &TryModel{Model: f.model(0), NewTranscript: true},
	}
	a.Refs = append(refsOf(a.Messages...), f.overflowRefs()...)
	a.Attempts = StepAttempts{TurnModel: f.model(0), Reset: true, Models: f.chain(), Candidates: f.chain(), Strict: true, Round: 1 << 20, Asking: 1, Losses: maxWorkerLosses, NewTranscript: true,
		Shown: &pipeline.Shown{Mode: pipeline.StreamBlocks, PreviewID: f.platformID("preview", 0), Text: f.text(1 << 10)}}
	for i := range pipeline.MaxStreamBlocks {
		a.Attempts.Shown.Blocks = append(a.Attempts.Shown.Blocks, f.platformID("block", i))
	}
	for i := range maxRecordedFailures {
		a.Attempts.Failed = append(a.Attempts.Failed, f.model(i)+": "+pipeline.ErrContextOverflow)
	}
	round := func(step, calls int) pipeline.ToolRound {
		r := pipeline.ToolRound{Text: f.text(256)}
		for i := range calls {
			callID := fmt.Sprintf("call-%d-%d", step, i)
			r.Calls = append(r.Calls, pipeline.ToolCall{ID: callID, Name: "tool", Arguments: `{"a":"` + f.text(256) + `"}`, RequiresApproval: true})
			r.Results = append(r.Results, pipeline.ToolResult{CallID: callID, Name: "tool", Output: f.text(64), IsError: true, Stored: true})
		}
		return r
	}
	a.Rounds = []pipeline.ToolRound{round(0, 1)}
	calls := round(1, 1)
	a.Calls = &calls
	for _, c := range calls.Calls {
		a.Decisions = append(a.Decisions, CallDecision{CallID: c.ID, Decided: true, Refused: &pipeline.ToolResult{CallID: c.ID, Name: c.Name, Output: "rejected", IsError: true}})
	}
	// A waiting turn has no reply yet and a parked one no calls: the
	// chunks stand for whatever text takes the rest of the bound.
	a.Chunks = []string{f.text(1 << 10), ""}
	// Then the smallest messages of the longest IDs, each with its ref,
	// as many as the bound leaves room for; the last chunk takes the rest.
	size := func() int {
		data, err := json.Marshal(a)
		require.NoError(t, err)
		return len(data)
	}
	lean := func(i int) pipeline.Inbound {
		return pipeline.Inbound{Channel: f.key.Channel, Account: f.key.Account, ChatID: f.key.Chat, MessageID: f.id("lean", i), SenderID: "s",
			ThreadID: f.id("thread", 0), Text: "y", ReceivedAt: f.now}
	}
	leanBytes, err := json.Marshal(struct {
		M pipeline.Inbound
		R msgRef
	}{lean(0), refsOf(lean(0))[0]})
	require.NoError(t, err)
	for i := 0; size()+len(leanBytes) <= maxCarriedTurnBytes; i++ {
		a.Messages = append(a.Messages, lean(i))
		a.Refs = append(a.Refs, refsOf(lean(i))...)
	}
	a.Chunks[1] = f.text(maxCarriedTurnBytes - size())
	require.Equal(t, maxCarriedTurnBytes, size())
	require.True(t, a.Carriable(), "the filled turn is one continue-as-new carries")
	s.Active = a

	s.Seq = 1 << 40
	// The record of a turn that began with the most refs a turn may: a
	// queue's worth of messages of the longest IDs, and the overflow's.
	rec := &TurnRecord{TurnID: turn, Model: f.model(0), StartedAt: f.now, FinishedAt: f.now, Outcome: "delivery_failed",
		Error: fmt.Sprintf("delivery of chunk %d/%d failed (%s): %s", 1<<20, 1<<20, pipeline.ErrContextOverflow, failureText(&Failure{Message: strings.Repeat("e", 2*maxFailureText)})), Steps: 1 << 20, Chunks: 1 << 20, Delivered: 1 << 20, Heartbeat: true, ThinkIgnored: true,
		Usage: &pipeline.Usage{InputTokens: 1 << 40, OutputTokens: 1 << 40, CostUSD: 12345.678901, HasCost: true}}
	smallest := pipeline.Inbound{MessageID: f.id("m", 0)}.Size()
	for i := range maxQueuedBytes/smallest + maxOverflowLines {
		rec.MessageIDs = append(rec.MessageIDs, f.id("m", i))
	}
	rec.Fallback = slices.Clone(a.Attempts.Failed)
	s.Last = rec
	for i := range maxDeliveries {
		s.Deliveries = append(s.Deliveries, DeliveryRecord{TurnID: f.turnID(i), Chunk: 1 << 20, PlatformMessageID: f.platformID("bot", i)})
	}
	s.Models.ModelOverride = f.model(assumedChainModels)
	for i := range assumedChainModels + 2 {
		s.Models.Cooldowns = append(s.Models.Cooldowns, Cooldown{Model: f.model(i), Until: f.now, Level: 1 << 20})
	}
	s.Resets = 1 << 40
}

// overflowRefs are the summarized messages a turn takes with its own.
func (f stateFiller) overflowRefs() []msgRef {
	refs := make([]msgRef, maxOverflowLines)
	for i := range refs {
		refs[i] = msgRef{ID: f.id("over", i), Thread: f.id("thread", i)}
	}
	return refs
}

func fillReactions(f stateFiller, s *ReactionsState, turn *ActiveTurn, carried bool) {
	for i := range maxReactions {
		id, thread := f.id("r", i), f.id("thread", i)
		s.Reactions = append(s.Reactions, Reaction{MessageID: id, ThreadID: thread, State: pipeline.ReactionWaitingUser, Shown: true, ClearAt: f.now, RetryAt: f.now, Attempts: reactionRetries})
		s.Changes = append(s.Changes, f.change(id, thread))
	}
	// The one being applied, besides the newer change of its message.
	s.Changes = append(s.Changes, f.change(f.id("r", 0), f.id("thread", 0)))
	s.ClearArmedAt = f.now
	// A parked reply's last chunk keeps what it sets for its retry, and
	// keeps it after the turn was stopped: the turn's refs, which Carry
	// takes while they are tracked.
	carry := &CarriedReactions{TurnID: turn.TurnID, Index: 1 << 20}
	for i := range maxReactions {
		carry.Changes = append(carry.Changes, f.change(f.id("r", i), f.id("thread", i)))
	}
	s.Carried = carry
	if carried {
		return
	}
	s.Applying = true
	d := Deliver{TurnID: turn.TurnID, Fast: true, Delivery: pipeline.Delivery{
		Session: f.key, IdempotencyKey: f.key.WorkflowID() + "/" + turn.TurnID + "/1048576", ThreadID: f.id("thread", 0),
		ReplyTo: f.id("m", 0), Text: turn.Chunks[len(turn.Chunks)-1], Index: 1 << 20, Total: 1 << 20,
		PrivateTo: f.id("sender", 0), PrivateVia: strings.Repeat("r", pipeline.MaxReplyTokenBytes), Replaces: f.platformID("preview", 0),
		ThenReact: carry.Changes,
	}}
	d.Delivery.Buttons = []pipeline.Button{{Text: "Approve", Action: "approve:p1"}, {Text: "Reject", Action: "reject:p1"}}
	s.Held = &LastChunkReady{Deliver: d, Refs: turn.Refs, State: pipeline.ReactionDone}
}

// fillProposals keeps the most decided proposals, and the most pending
// ones, whose calls are the carried turn's.
func fillProposals(f stateFiller, s *ProposalsState) {
	// The longest summary SummarizeArgs makes: many keys, long values of
	// four-byte runes.
	var args []string
	for i := range 40 {
		args = append(args, fmt.Sprintf(`"k%02d":"%s"`, i, strings.Repeat("😀", 100)))
	}
	summary := pipeline.SummarizeArgs("{" + strings.Join(args, ",") + "}")
	for i := range keptProposals + maxPendingProposals {
		p := Proposal{ID: fmt.Sprintf("p%d", 1_000_000+i), Call: pipeline.ToolCall{ID: f.id("call", i), Name: "tool", RequiresApproval: true},
			Summary: summary, Requester: f.who(i), Origin: f.id("m", i), ThreadID: f.id("thread", i), TurnID: f.turnID(0),
			CreatedAt: f.now, ExpiresAt: f.now, Status: ProposalRejected, DecidedBy: f.text(maxDeciderBytes), Reason: f.text(maxReasonBytes), MessageID: f.platformID("bot", i)}
		if i >= keptProposals {
			// A carried waiting turn's calls, its arguments among them.
			p.Status, p.DecidedBy, p.Reason = ProposalPending, "", ""
			p.Call.Arguments = f.text(maxCarriedTurnBytes / maxPendingProposals)
		}
		s.Proposals = append(s.Proposals, p)
	}
	s.Seq, s.Refusals, s.ExpiryArmedAt = 1<<40, 1<<40, f.now
}

func fillReplies(f stateFiller, s *RepliesState, carried bool) {
	s.Seq, s.Notices, s.Commands = 1<<40, 1<<40, 1<<40
	if carried {
		return
	}
	// The save after one under way.
	saved := pipeline.SessionSettings{ModelOverride: f.model(0), Activation: pipeline.ActivationSmart, Queue: queuePatch(),
		Think: pipeline.ThinkHigh, Verbose: true, Usage: pipeline.UsageFull, Muted: true}
	s.SaveNext = &saved
	for i := range maxPendingReplies {
		s.Replies = append(s.Replies, DirectReply{ID: fmt.Sprintf("%s%d", replyDeliveryPrefix, 1_000_000+i), MessageID: f.id("m", i), ThreadID: f.id("thread", i),
			Text: f.text(assumedReplyBytes), Key: fmt.Sprintf("notice-%d", 1_000_000+i), To: f.id("sender", i), Via: strings.Repeat("r", pipeline.MaxReplyTokenBytes)})
	}
	for i := range maxCallsUnderWay {
		s.Calls = append(s.Calls, PendingCall{Key: fmt.Sprintf("%s%s/%d", repliesCallPrefix, callHeartbeat, 1_000_000+i), Kind: callHeartbeat,
			MessageID: f.id("m", i), ThreadID: f.id("thread", i), Who: f.who(i), EventID: f.id("event", i),
			Context: &pipeline.ContextRequest{Session: f.key, Group: true, Observed: 1 << 20, ObservedTokens: 1 << 30},
			Model:   f.model(0), Action: f.id("action", i), HeartbeatLine: f.text(256)})
	}
	s.Compaction = &Compaction{MessageID: f.id("m", 0), ThreadID: f.id("thread", 0), Focus: f.text(pipeline.MaxTextBytes), Models: f.chain(), Next: assumedChainModels - 1}
	for _, m := range f.chain() {
		s.Compaction.Failed = append(s.Compaction.Failed, m+": "+pipeline.ErrContextOverflow)
	}
}

func fillControl(f stateFiller, s *ControlState, carried bool) {
	s.Think, s.Verbose, s.UsageMode, s.Muted, s.ThinkNoteDue, s.PersonActed = pipeline.ThinkHigh, true, pipeline.UsageFull, true, true, true
	s.UsageTotal = pipeline.Usage{InputTokens: 1 << 40, OutputTokens: 1 << 40, CostUSD: 12345.678901, HasCost: true}
	s.IdleFrom = f.now
	s.LastHeartbeat = &HeartbeatRecord{TickID: f.tick(0), ScheduledAt: f.now, At: f.now, Outcome: HeartbeatFailed + ": the checklist could not be read (" + pipeline.ErrContextOverflow + ")", TurnID: f.turnID(0)}
	for i := range heartbeatTicksKept {
		s.HeartbeatTicks = append(s.HeartbeatTicks, f.tick(i))
	}
	s.RunningTick = f.tick(0)
	if carried {
		return
	}
	for i := range heartbeatTicksKept {
		s.Ticks = append(s.Ticks, pipeline.HeartbeatTick{ID: f.tick(i), ScheduledAt: f.now})
	}
}

// TestLargestStateFitsInOnePayload fills every collection of State to its
// bound (stateBounds) with the largest items the limits allow, and checks
// that the whole still fits the continue-as-new input. It is the audit of
// the bounds each part states: a bound raised too far fails here, and
// TestEveryCollectionOfStateIsAudited fails a collection without one.
func TestLargestStateFitsInOnePayload(t *testing.T) {
	f := newStateFiller()
	size := func(v any) int {
		data, err := json.Marshal(v)
		require.NoError(t, err)
		return len(data)
	}
	carried, all := largestState(t, true), largestState(t, false)
	input := size(Params{Session: f.key, State: carried})
	t.Logf("largest state a chat session carries: %d bytes (%.2f MiB) of the %d-byte payload limit; with what holds the run filled too: %d bytes",
		input, float64(input)/(1<<20), payloadLimit, size(Params{Session: f.key, State: all}))
	parts := reflect.ValueOf(*carried)
	for i := range parts.NumField() {
		t.Logf("  %-11s %8d bytes", parts.Type().Field(i).Name, size(parts.Field(i).Interface()))
	}
	assert.Less(t, input, payloadLimit)
}

// TestEveryCollectionOfStateIsAudited walks State's type: every slice and
// map it can reach must be listed in stateBounds with its bound, and
// filled by largestState, so a new collection cannot escape the audit.
// What continue-as-new carries must leave empty exactly what holds the
// run.
func TestEveryCollectionOfStateIsAudited(t *testing.T) {
	found := map[string]bool{}
	collectionFields(t, reflect.TypeFor[State](), map[reflect.Type]bool{}, found)
	for field := range found {
		_, listed := stateBounds[field]
		assert.True(t, listed, "%s is a collection of State: give it a bound, fill it in largestState, and list it in stateBounds", field)
	}
	for field := range stateBounds {
		assert.True(t, found[field], "stateBounds lists %s, which State no longer has", field)
	}

	all, carried := map[string]bool{}, map[string]bool{}
	filledFields(reflect.ValueOf(largestState(t, false)), all)
	filledFields(reflect.ValueOf(largestState(t, true)), carried)
	for field := range found {
		assert.True(t, all[field], "largestState leaves %s empty: fill it to its bound", field)
		assert.Equal(t, !stateBounds[field].holdsRun, carried[field], "%s: filled as carried only when it does not hold the run", field)
	}
}

// fieldName is a struct field as stateBounds names it: "session.Buffer.Messages".
func fieldName(owner reflect.Type, f reflect.StructField) string {
	return owner.String() + "." + f.Name
}

// collectionFields adds to found every slice or map field of the structs
// t reaches. It fails on an interface, whose contents no walk can know.
func collectionFields(tb testing.TB, t reflect.Type, seen map[reflect.Type]bool, found map[string]bool) {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		collectionFields(tb, t.Elem(), seen, found)
	case reflect.Map:
		collectionFields(tb, t.Key(), seen, found)
		collectionFields(tb, t.Elem(), seen, found)
	case reflect.Interface:
		tb.Errorf("State holds an interface (%s): its size cannot be audited", t)
	case reflect.Struct:
		if seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			if k := f.Type.Kind(); k == reflect.Slice || k == reflect.Map {
				found[fieldName(t, f)] = true
			}
			collectionFields(tb, f.Type, seen, found)
		}
	}
}

// filledFields adds to filled every slice or map field that is not empty
// somewhere in v.
func filledFields(v reflect.Value, filled map[string]bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			filledFields(v.Elem(), filled)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			filledFields(v.Index(i), filled)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			filledFields(it.Key(), filled)
			filledFields(it.Value(), filled)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			fv := v.Field(i)
			if k := fv.Kind(); (k == reflect.Slice || k == reflect.Map) && fv.Len() > 0 {
				filled[fieldName(t, f)] = true
			}
			filledFields(fv, filled)
		}
	}
}
