package session

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/replyflow/replyflow/pipeline"
)

// Replies' bounds.
const (
	// maxPendingReplies bounds the direct answers (commands, notices)
	// being delivered at once; past it a command still takes effect but
	// its answer is not sent, and the log says so.
	maxPendingReplies = 20
	// maxCallsUnderWay bounds the claims, command activities and feedback
	// records under way at once: each holds continue-as-new until it
	// answers, so a flood of them is refused (a command or a claim is
	// answered so, feedback is dropped with a log line) instead of
	// growing the state. A save is never refused: at most one runs and
	// one waits (Save).
	maxCallsUnderWay = 50
)

// Prefixes of the keys the replies part gives its effects, so the loop
// routes their outcomes back to it.
const (
	replyDeliveryPrefix = "reply/"
	repliesCallPrefix   = "replies/"
)

// ReplyDelivery reports whether a ChunkDelivered's TurnID is a direct
// reply's delivery.
func ReplyDelivery(turnID string) bool { return strings.HasPrefix(turnID, replyDeliveryPrefix) }

// RepliesCall reports whether a Returned's Key is a Call of the replies
// part.
func RepliesCall(key string) bool { return strings.HasPrefix(key, repliesCallPrefix) }

// RepliesState is the replies part: the answers the session gives
// without the model (commands, notices) until they are delivered, and
// the activities behind them: claims, saved settings, feedback records,
// and the commands answered from the store (/context, /compact, /export,
// /heartbeat).
type RepliesState struct {
	Replies []DirectReply `json:"replies,omitempty"`
	Calls   []PendingCall `json:"calls,omitempty"`
	// SaveNext is the save that follows the one under way: a newer save
	// replaces it, so saves land in order and at most two are held.
	SaveNext *pipeline.SessionSettings `json:"save_next,omitempty"`
	// Compaction is the /compact under way; turns wait for it.
	Compaction *Compaction `json:"compaction,omitempty"`
	// Seq numbers the deliveries and calls, so each has a key of its own.
	Seq      int `json:"seq,omitempty"`
	Notices  int `json:"notices,omitempty"`
	Commands int `json:"commands,omitempty"`
}

// DirectReply is an answer the session gives itself, without the model.
type DirectReply struct {
	// ID is the delivery's TurnID in Deliver and ChunkDelivered.
	ID        string `json:"id"`
	MessageID string `json:"message_id"`
	ThreadID  string `json:"thread_id,omitempty"`
	Text      string `json:"text"`
	// Key tells apart several notices about one message; a command's
	// answer has none.
	Key string `json:"key,omitempty"`
	// To and Via are the Delivery's PrivateTo and PrivateVia: a notice
	// for one user.
	To  string `json:"to,omitempty"`
	Via string `json:"via,omitempty"`
}

// callKind is what a PendingCall does, which says how its Returned is
// answered.
type callKind string

const (
	callClaim     callKind = "claim"
	callSave      callKind = "save"
	callFeedback  callKind = "feedback"
	callContext   callKind = "context"
	callCompact   callKind = "compact"
	callExport    callKind = "export"
	callHeartbeat callKind = "heartbeat"
)

// PendingCall is a Call of the replies part under way, with what its
// answer needs.
type PendingCall struct {
	Key  string   `json:"key"`
	Kind callKind `json:"kind"`
	// MessageID and ThreadID are the message the answer goes under.
	MessageID string `json:"message_id,omitempty"`
	ThreadID  string `json:"thread_id,omitempty"`
	// Who is the claimer of a claim, and ByBot says it is a bot, whose
	// claim burns the code.
	Who   string `json:"who,omitempty"`
	ByBot bool   `json:"by_bot,omitempty"`
	// EventID is a feedback record's event.
	EventID string `json:"event_id,omitempty"`
	// Context is /context's request and Model the model its answer names.
	Context *pipeline.ContextRequest `json:"context,omitempty"`
	Model   string                   `json:"model,omitempty"`
	// Action is /heartbeat's, and HeartbeatLine the last tick its answer
	// shows.
	Action        string `json:"action,omitempty"`
	HeartbeatLine string `json:"heartbeat_line,omitempty"`
}

func (c PendingCall) ref() msgRef { return msgRef{ID: c.MessageID, Thread: c.ThreadID} }

// AnswerWanted: another part answers a person's message directly (a
// decision's outcome, a refusal); the message shows ✅ once it is out.
type AnswerWanted struct {
	MessageID, ThreadID, Text string
}

// NoticeWanted: another part tells the chat something under a message,
// leaving the message's reaction alone; To and Via make it a notice for
// that one user (pipeline.Delivery.PrivateTo).
type NoticeWanted struct {
	MessageID, ThreadID, Text, To, Via string
}

// OwnerClaimed: a claim code made Who ("provider:id") an owner; the
// loop adds Who to the run's owners.
type OwnerClaimed struct{ Who string }

func (AnswerWanted) isEvent() {}
func (NoticeWanted) isEvent() {}
func (OwnerClaimed) isEvent() {}

// Busy is true while a reply, claim, save, command activity or feedback
// record is under way: a run continues as new only when none is.
func (s *RepliesState) Busy() bool { return len(s.Replies) > 0 || len(s.Calls) > 0 }

// Compacting is true while /compact replaces the transcript: no turn may
// start, so none reads the old transcript and writes after the switch.
func (s *RepliesState) Compacting() bool { return s.Compaction != nil }

// Answer replies to a person's message, which shows ✅ once delivered.
func (s *RepliesState) Answer(env Env, to msgRef, text string) []Effect {
	return s.send(env, DirectReply{MessageID: to.ID, ThreadID: to.Thread, Text: text})
}

// Notice delivers a short message from the session itself under a
// message, leaving the message's reaction alone; with To it is meant for
// that user only.
func (s *RepliesState) Notice(env Env, n NoticeWanted) []Effect {
	s.Notices++
	return s.send(env, DirectReply{
		MessageID: n.MessageID, ThreadID: n.ThreadID, Text: n.Text, To: n.To, Via: n.Via,
		Key: fmt.Sprintf("notice-%d", s.Notices),
	})
}

// send records a direct reply as pending and delivers it, retried until
// the delivery deadline.
func (s *RepliesState) send(env Env, r DirectReply) []Effect {
	if len(s.Replies) >= maxPendingReplies {
		env.logger().Warn("Direct reply not sent: too many answers are being delivered at once; the command itself took effect",
			"message_id", r.MessageID, "pending", len(s.Replies))
		return nil
	}
	s.Seq++
	r.ID = replyDeliveryPrefix + strconv.Itoa(s.Seq)
	s.Replies = append(s.Replies, r)
	// The key is the message's (and the notice's): a retried delivery,
	// or an answer given again after a worker lost the task, is sent once.
	key := env.Key.WorkflowID() + "/reply/" + r.MessageID
	if r.Key != "" {
		key += "/" + r.Key
	}
	return []Effect{Deliver{TurnID: r.ID, Delivery: pipeline.Delivery{
		Session:        env.Key,
		IdempotencyKey: key,
		ThreadID:       r.ThreadID,
		ReplyTo:        r.MessageID,
		Text:           r.Text,
		Total:          1,
		PrivateTo:      r.To,
		PrivateVia:     r.Via,
	}}}
}

// Delivered answers a direct reply's ChunkDelivered: a command's message
// shows ✅, or ❌ when its answer could not be delivered; a notice leaves
// the message's reaction to its turn.
func (s *RepliesState) Delivered(env Env, ev ChunkDelivered) []Effect {
	r, ok := take(&s.Replies, func(r DirectReply) bool { return r.ID == ev.TurnID })
	if !ok {
		return nil
	}
	if r.Key != "" {
		if ev.Failure != nil {
			env.logger().Error("Notice not delivered", "message_id", r.MessageID, "error", ev.Failure)
		}
		return nil
	}
	state := pipeline.ReactionDone
	if ev.Failure != nil {
		env.logger().Error("Command reply not delivered", "message_id", r.MessageID, "error", ev.Failure)
		state = pipeline.ReactionError
	}
	return []Effect{Emit{ReactionsWanted{Refs: []msgRef{{ID: r.MessageID, Thread: r.ThreadID}}, State: state}}}
}

// Claim spends a claim code for the sender of in (a local activity
// against the store) and tells them how it went.
func (s *RepliesState) Claim(env Env, in pipeline.Inbound, code string) []Effect {
	env.logger().Info("Inbound decision", "message_id", in.MessageID, "decision", pipeline.DecisionClaim)
	if s.full(env) {
		return s.Answer(env, refOf(in), tooManyCalls)
	}
	who := sender(in)
	c := s.newCall(callClaim, refOf(in))
	c.Who, c.ByBot = who, in.SenderIsBot
	return []Effect{s.track(c, Call{
		Key: c.Key, Activity: pipeline.ActivityClaim, Args: []any{pipeline.ClaimRequest{Code: code, Who: who, ByBot: c.ByBot}},
		Output: new(bool), Local: true, Summary: "claim",
	})}
}

// Save stores the chat's settings in its session entry, so they outlive
// this workflow run. A save asked for while one is under way follows it
// (only the newest), so an older one never lands last.
func (s *RepliesState) Save(env Env, settings pipeline.SessionSettings) []Effect {
	for _, c := range s.Calls {
		if c.Kind == callSave {
			s.SaveNext = &settings
			return nil
		}
	}
	c := s.newCall(callSave, msgRef{})
	return []Effect{s.track(c, Call{
		Key: c.Key, Activity: pipeline.ActivitySaveSession, Args: []any{env.Key, settings},
		Local: true, Summary: "save session settings",
	})}
}

// RecordFeedback stores a user's reaction on a message (the activity
// resolves the message to the bot's internal one); a record the store
// keeps refusing is dropped.
func (s *RepliesState) RecordFeedback(env Env, f pipeline.Feedback) []Effect {
	if s.full(env) {
		env.logger().Warn("Feedback not recorded: too many activities are under way; it is dropped", "event_id", f.EventID, "message_id", f.MessageID)
		return nil
	}
	c := s.newCall(callFeedback, msgRef{ID: f.MessageID})
	c.EventID = f.EventID
	return []Effect{s.track(c, Call{
		Key: c.Key, Activity: pipeline.ActivityRecordFeedback, Args: []any{f}, Local: true, Summary: "record feedback",
	})}
}

// tooManyCalls answers a command or claim past maxCallsUnderWay.
const tooManyCalls = "⚠️ Too much is under way in this chat right now; send that again in a moment."

// full is true when no other call may start: maxCallsUnderWay are under
// way.
func (s *RepliesState) full(env Env) bool {
	if len(s.Calls) < maxCallsUnderWay {
		return false
	}
	env.logger().Warn("Call refused: too many are under way", "under_way", len(s.Calls))
	return true
}

// newCall numbers a new call of kind about ref.
func (s *RepliesState) newCall(kind callKind, ref msgRef) PendingCall {
	s.Seq++
	return PendingCall{
		Key: repliesCallPrefix + string(kind) + "/" + strconv.Itoa(s.Seq), Kind: kind,
		MessageID: ref.ID, ThreadID: ref.Thread,
	}
}

// track records c as under way and returns its effect.
func (s *RepliesState) track(c PendingCall, call Call) Effect {
	s.Calls = append(s.Calls, c)
	return call
}

// Returned answers the Returned of a Call of the replies part.
func (s *RepliesState) Returned(env Env, ev Returned) []Effect {
	c, ok := take(&s.Calls, func(c PendingCall) bool { return c.Key == ev.Key })
	if !ok {
		return nil
	}
	switch c.Kind {
	case callClaim:
		return s.claimed(env, c, ev)
	case callSave:
		if ev.Failure != nil {
			env.logger().Warn("Session settings not saved; they hold until the session completes", "error", ev.Failure)
		}
		if next := s.SaveNext; next != nil {
			s.SaveNext = nil
			return s.Save(env, *next)
		}
	case callFeedback:
		if ev.Failure != nil {
			env.logger().Warn("Feedback not recorded; it is dropped", "event_id", c.EventID, "message_id", c.MessageID, "error", ev.Failure)
		}
	default:
		return s.commandReturned(env, c, ev)
	}
	return nil
}

// botClaimRefused answers a claim code a bot sent.
const botClaimRefused = "A bot cannot become an owner, and that code no longer works: this chat has seen it. " +
	"Restart the worker with no REPLYFLOW_OWNERS for a new code, and send it to the agent from your own account, in a direct message."

// claimed answers a claim: a spent code makes its sender an owner.
func (s *RepliesState) claimed(env Env, c PendingCall, ev Returned) []Effect {
	switch {
	case ev.Failure != nil:
		env.logger().Error("Claim not checked", "error", ev.Failure)
		return s.Answer(env, c.ref(), "The claim could not be checked right now; send the code again.")
	case c.ByBot:
		env.logger().Warn("Claim code sent by a bot: no owner made, the code is burnt", "sender", c.Who)
		return s.Answer(env, c.ref(), botClaimRefused)
	case !*ev.Output.(*bool):
		return s.Answer(env, c.ref(), "That claim code is not valid, or was already used.")
	}
	return append([]Effect{Emit{OwnerClaimed{Who: c.Who}}},
		s.Answer(env, c.ref(), "You ("+c.Who+") are now an owner of this agent.")...)
}

// take removes the first element of list that matches, and returns it.
func take[T any](list *[]T, match func(T) bool) (T, bool) {
	i := slices.IndexFunc(*list, match)
	if i < 0 {
		var none T
		return none, false
	}
	found := (*list)[i]
	*list = slices.Delete(*list, i, i+1)
	return found, true
}

func refOf(in pipeline.Inbound) msgRef { return msgRef{ID: in.MessageID, Thread: in.ThreadID} }
