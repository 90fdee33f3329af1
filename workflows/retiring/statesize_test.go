package retiring

import (
	"encoding/json"
	"fmt"
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

// TestLargestStateFitsInOnePayload fills every collection of State to its
// bound with the largest items the limits allow, and checks that the whole
// still fits the continue-as-new input. It is the audit of the bounds in
// bounds.go and state.go: a new collection without a bound, or a bound
// raised too far, fails here.
func TestLargestStateFitsInOnePayload(t *testing.T) {
	id := func(prefix string, i int) string {
		s := fmt.Sprintf("%s-%d-", prefix, i)
		return s + strings.Repeat("x", pipeline.MaxIDBytes-len(s))
	}
	text := func(n int) string { return strings.Repeat("y", n) }
	msg := func(prefix string, i, size int) pipeline.Inbound {
		return pipeline.Inbound{Channel: "telegram", Account: id("acct", 0), ChatID: id("chat", 0), ChatType: pipeline.ChatGroup,
			MessageID: id(prefix, i), SenderID: id("sender", i), SenderName: strings.Repeat("n", pipeline.MaxNameBytes),
			ThreadID: id("thread", i), ReplyTo: id("reply", i), Text: text(size), ReceivedAt: testStart}
	}
	// msgs fills a size budget (as sizeOf counts it) with at most count
	// messages of the longest IDs and names, the text taking the rest.
	msgs := func(prefix string, budget, count int) []pipeline.Inbound {
		overhead := msg(prefix, 0, 0).Size()
		per := max(budget/count, overhead+1)
		var out []pipeline.Inbound
		for i := 0; i < count && sizeOf(out)+per <= budget; i++ {
			out = append(out, msg(prefix, i, per-overhead))
		}
		return out
	}
	now := testStart
	st := &State{Status: StatusDelivering}
	for i := range seenCapacity {
		st.Seen = append(st.Seen, SeenMessage{ID: seenKey(id("seen", i)), At: now})
	}
	for i := range maxOpenBuffers {
		st.Buffers = append(st.Buffers, Buffer{Key: pipeline.BufferKey{Sender: id("sender", i), Thread: pipeline.ThreadKey(id("thread", i))},
			Messages: msgs(fmt.Sprintf("buf%d", i), maxBufferedBytes, maxBufferedMessages), FlushAt: now, FirstAt: now, Gen: i})
	}
	st.GateBuffer = msgs("gate", maxBufferedBytes, maxBufferedMessages)
	// The queue's byte bound, or a single batch over it: a window flushed
	// just past its bound by one message of the largest size.
	for i := range 4 {
		st.Queue = append(st.Queue, Batch{Messages: msgs(fmt.Sprintf("q%d", i), maxQueuedBytes/4, 10)})
	}
	bigBatch := maxBufferedBytes + msg("x", 0, pipeline.MaxTextBytes).Size()
	st.Active = &ActiveTurn{TurnID: id("turn", 0), Messages: msgs("active", max(maxQueuedBytes, bigBatch), maxBufferedMessages),
		Steered: msgs("steered", maxSteeredBytes, maxSteered), Phase: PhaseParked}
	// A carried turn's progress, at the most continue-as-new carries.
	st.Active.Progress = &TurnProgress{Refs: refsOf(st.Active.Messages...), Chunks: []string{""}}
	st.Active.Progress.Chunks[0] = text(maxCarriedTurnBytes - progressSize(st.Active.Progress))
	require.Equal(t, maxCarriedTurnBytes, progressSize(st.Active.Progress))
	st.Overflow = &Overflow{Dropped: 1000}
	for i := range maxOverflowLines {
		st.Overflow.Summaries = append(st.Overflow.Summaries, text(pipeline.SummaryMaxRunes*4))
		st.Overflow.MessageIDs = append(st.Overflow.MessageIDs, id("over", i))
	}
	for i := range maxParticipants {
		st.Participants = append(st.Participants, Participant{ID: "telegram:" + id("p", i), Name: strings.Repeat("n", pipeline.MaxNameBytes), LastSeen: now})
		st.Sticky = append(st.Sticky, pipeline.StickyCredit{Author: "telegram:" + id("p", i), Expires: now})
	}
	for range pipeline.ContextBufferSize {
		st.Observed = append(st.Observed, pipeline.Observed{Sender: strings.Repeat("n", pipeline.MaxNameBytes), Text: text(maxObservedBytes), At: now})
	}
	for i := range maxBotThreads {
		st.BotThreads = append(st.BotThreads, id("thread", i))
	}
	for i := range maxReactions {
		st.Reactions = append(st.Reactions, Reaction{MessageID: id("r", i), ThreadID: id("thread", i), State: pipeline.ReactionDone, ClearAt: now, RetryAt: now, Attempts: 3})
		st.ReactionChanges = append(st.ReactionChanges, pipeline.ReactionChange{Session: pipeline.SessionKey{Channel: "telegram", Account: id("acct", 0), Chat: id("chat", 0)},
			MessageID: id("r", i), ThreadID: id("thread", i), State: pipeline.ReactionDone, Attempt: 3})
	}
	// Decided proposals are kept for late clicks, without their tool
	// arguments; a carried turn's pending ones repeat its calls, which its
	// progress bounds.
	for i := range keptProposals + 8 {
		p := Proposal{ID: fmt.Sprintf("p%d", i), Call: pipeline.ToolCall{ID: id("call", i), Name: "tool"},
			Summary: text(400), Requester: "telegram:" + id("p", i), Origin: id("m", i), ThreadID: id("thread", i), TurnID: id("turn", 0),
			CreatedAt: now, ExpiresAt: now, Status: ProposalApproved, DecidedBy: "telegram:" + id("p", i), Reason: text(200), MessageID: id("bot", i)}
		if i >= keptProposals {
			// A carried waiting turn's calls, repeated.
			p.Status, p.Call.Arguments = ProposalPending, text(maxCarriedTurnBytes/8)
		}
		st.Proposals = append(st.Proposals, p)
	}
	for i := range maxPendingReplies {
		st.Replies = append(st.Replies, DirectReply{MessageID: id("m", i), ThreadID: id("thread", i), Text: text(2 << 10), Key: "notice-1"})
	}
	for i := range deliveryWindow {
		st.Deliveries = append(st.Deliveries, DeliveryRecord{TurnID: id("turn", i), Chunk: i, PlatformMessageID: id("bot", i)})
	}
	st.LastTurn = &TurnRecord{TurnID: id("turn", 0), MessageIDs: messageIDs(st.Active.Messages), Error: text(500), StartedAt: now, FinishedAt: now.Add(time.Second)}

	data, err := json.Marshal(SessionParams{Session: pipeline.SessionKey{Channel: "telegram", Chat: id("chat", 0)}, State: st})
	require.NoError(t, err)
	t.Logf("largest state a session can carry: %d bytes (%.2f MiB) of the %d-byte payload limit", len(data), float64(len(data))/(1<<20), payloadLimit)
	parts := map[string]any{"seen": st.Seen, "buffers": st.Buffers, "gate": st.GateBuffer, "queue": st.Queue, "active": st.Active,
		"reactions": st.Reactions, "reaction_changes": st.ReactionChanges, "proposals": st.Proposals, "participants": st.Participants, "observed": st.Observed}
	for _, name := range []string{"seen", "buffers", "gate", "queue", "active", "reactions", "reaction_changes", "proposals", "participants", "observed"} {
		b, _ := json.Marshal(parts[name])
		t.Logf("  %-17s %8d bytes", name, len(b))
	}
	assert.Less(t, len(data), payloadLimit)
}
