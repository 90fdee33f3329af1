package session

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

func TestAnAnswerIsDeliveredDurablyAndMarksItsMessageOnceOut(t *testing.T) {
	env := commandEnv()
	var r RepliesState
	out := r.Answer(env, msgRef{ID: "m1", Thread: "th"}, "done")
	require.Len(t, out, 1)
	d := out[0].(Deliver)
	assert.False(t, d.Fast, "a direct reply is retried until the delivery deadline")
	assert.Equal(t, pipeline.Delivery{
		Session: env.Key, IdempotencyKey: env.Key.WorkflowID() + "/reply/m1", ThreadID: "th", ReplyTo: "m1", Text: "done", Total: 1,
	}, d.Delivery)
	assert.True(t, ReplyDelivery(d.TurnID))
	assert.True(t, r.Busy())

	tests := []struct {
		name    string
		failure *Failure
		state   pipeline.ReactionState
	}{
		{name: "delivered", state: pipeline.ReactionDone},
		{name: "not delivered", failure: &Failure{Type: "PlatformRejected"}, state: pipeline.ReactionError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := RepliesState{}
			id := r.Answer(env, msgRef{ID: "m1", Thread: "th"}, "done")[0].(Deliver).TurnID
			got := r.Delivered(env, ChunkDelivered{TurnID: id, Failure: tt.failure})
			assert.Equal(t, []Effect{Emit{ReactionsWanted{Refs: []msgRef{{ID: "m1", Thread: "th"}}, State: tt.state}}}, got)
			assert.False(t, r.Busy())
			assert.Empty(t, r.Delivered(env, ChunkDelivered{TurnID: id}), "a delivery is answered once")
		})
	}
}

func TestANoticeLeavesTheMessagesReactionAlone(t *testing.T) {
	env := commandEnv()
	var r RepliesState
	first := r.Notice(env, NoticeWanted{MessageID: "m1", Text: "a", To: "u", Via: "tok"})[0].(Deliver)
	second := r.Notice(env, NoticeWanted{MessageID: "m1", Text: "b"})[0].(Deliver)
	assert.Equal(t, "u", first.Delivery.PrivateTo)
	assert.Equal(t, "tok", first.Delivery.PrivateVia)
	assert.NotEqual(t, first.Delivery.IdempotencyKey, second.Delivery.IdempotencyKey, "two notices under one message are two messages")
	assert.Empty(t, r.Delivered(env, ChunkDelivered{TurnID: first.TurnID}))
	assert.Empty(t, r.Delivered(env, ChunkDelivered{TurnID: second.TurnID, Failure: &Failure{Type: "Timeout"}}))
	assert.False(t, r.Busy())
}

func TestPendingRepliesAreBounded(t *testing.T) {
	env := commandEnv()
	var r RepliesState
	var first Deliver
	for i := range maxPendingReplies {
		out := r.Answer(env, msgRef{ID: fmt.Sprint(i)}, "ok")
		require.Len(t, out, 1)
		if i == 0 {
			first = out[0].(Deliver)
		}
	}
	assert.Empty(t, r.Answer(env, msgRef{ID: "over"}, "ok"), "past the bound an answer is not sent")
	assert.Len(t, r.Replies, maxPendingReplies)

	r.Delivered(env, ChunkDelivered{TurnID: first.TurnID})
	assert.Len(t, r.Answer(env, msgRef{ID: "again"}, "ok"), 1, "a delivered answer makes room")
}

func TestAClaimSpendsTheCodeAndTellsTheSender(t *testing.T) {
	tests := []struct {
		name    string
		ok      bool
		failure *Failure
		owner   bool
		answer  string
	}{
		{name: "spent", ok: true, owner: true, answer: "You (web:u) are now an owner of this agent."},
		{name: "not valid", answer: "That claim code is not valid, or was already used."},
		{name: "not checked", failure: &Failure{Type: "Timeout"}, answer: "The claim could not be checked right now; send the code again."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := commandEnv()
			var r RepliesState
			in := said("u", "m1", "claim-0123456789ab")
			calls := split(t, r.Claim(env, in, "claim-0123456789ab")).calls
			require.Len(t, calls, 1)
			call := calls[0]
			assert.Equal(t, pipeline.ActivityClaim, call.Activity)
			assert.True(t, call.Local)
			assert.Equal(t, []any{pipeline.ClaimRequest{Code: "claim-0123456789ab", Who: "web:u"}}, call.Args)
			assert.True(t, RepliesCall(call.Key))
			assert.True(t, r.Busy())

			got := split(t, r.Returned(env, Returned{Key: call.Key, Output: &tt.ok, Failure: tt.failure}))
			assert.Equal(t, []string{tt.answer}, got.answers)
			if tt.owner {
				assert.Equal(t, []Event{OwnerClaimed{Who: "web:u"}}, got.events)
			} else {
				assert.Empty(t, got.events)
			}
		})
	}
}

func TestSavesLandInTheOrderTheyWereAskedFor(t *testing.T) {
	env := commandEnv()
	var r RepliesState
	first := split(t, r.Save(env, pipeline.SessionSettings{ModelOverride: "a/1"}))
	require.Len(t, first.saved, 1)
	assert.Empty(t, r.Save(env, pipeline.SessionSettings{ModelOverride: "a/2"}), "a save waits for the one under way")
	assert.Empty(t, r.Save(env, pipeline.SessionSettings{ModelOverride: "a/3"}), "and only the newest waits")
	key := r.Calls[0].Key

	next := split(t, r.Returned(env, Returned{Key: key, Failure: &Failure{Type: "Timeout"}}))
	assert.Equal(t, []pipeline.SessionSettings{{ModelOverride: "a/3"}}, next.saved)
	assert.True(t, r.Busy())
	assert.Empty(t, r.Returned(env, Returned{Key: r.Calls[0].Key}))
	assert.False(t, r.Busy())
}

func TestFeedbackIsRecordedAndDroppedPastTheBound(t *testing.T) {
	env := commandEnv()
	var r RepliesState
	f := pipeline.Feedback{Channel: "web", ChatID: "c", EventID: "e1", MessageID: "bot-1", SenderID: "u", Emoji: []string{"👍"}}
	calls := split(t, r.RecordFeedback(env, f)).calls
	require.Len(t, calls, 1)
	assert.Equal(t, pipeline.ActivityRecordFeedback, calls[0].Activity)
	assert.Equal(t, []any{f}, calls[0].Args)
	assert.True(t, calls[0].Local)
	assert.Empty(t, r.Returned(env, Returned{Key: calls[0].Key, Failure: &Failure{Type: "Unavailable"}}), "a record that failed is dropped")
	assert.False(t, r.Busy())

	for range maxCallsUnderWay {
		require.Len(t, r.RecordFeedback(env, f), 1)
	}
	assert.Empty(t, r.RecordFeedback(env, f), "past the bound feedback is dropped")
	got := split(t, r.Claim(env, said("u", "m1", "claim-0123456789ab"), "claim-0123456789ab"))
	assert.Equal(t, []string{tooManyCalls}, got.answers, "and a claim is told to come again")
	assert.Empty(t, got.calls)
}
