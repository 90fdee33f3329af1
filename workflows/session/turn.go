package session

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// A turn, told as the story it is:
//
//  1. Begin: the queue hands it a batch; its messages show ✍️ and the
//     first model of the chain is asked (ask).
//  2. Answered: a model attempt came back. A failure goes to the chain's
//     rule (models.go: the same model again, the next one, a wait, a
//     reset, or giving up); an answer that calls tools runs them
//     (RunTool, or proposals for those that need a person's approval);
//     an answer without tools is the reply.
//  3. ToolRan / Decided: when every call of the step has its result, the
//     next step is asked, with what was steered in meanwhile.
//  4. Reply: the reply is dressed, cut into chunks and delivered in order,
//     the first in a local activity; the last carries the done reaction.
//  5. Delivered: the next chunk, or the end. A chunk that could not be
//     delivered parks the turn until an operator retries it.
//  6. End: the record is kept, what was steered in but never taken goes
//     back to the queue, and TurnEnded tells the other parts.
//
// A /stop or an interrupt cancels the turn's effects; whatever they
// answer afterwards is ignored, and the turn ends stopped.

// Turn phases, as the state query and the search attributes show them.
const (
	PhaseModel      = "model"
	PhaseWaiting    = "waiting_user"
	PhaseDelivering = "delivering"
	PhaseParked     = "parked"
)

// maxDeliveries bounds the delivery ledger: the platform IDs of the
// latest chunks, by which the session knows its own messages.
const maxDeliveries = 200

// maxFailureText bounds the failure's own words a parked turn keeps for
// `replyflow inspect`, so an operator reads what failed without the
// worker's log.
const maxFailureText = 300

// failureText is a failure's own words cut to maxFailureText, valid
// UTF-8: the application error's message where there is one (the
// platform's answer, as the activity classified it), not the SDK's
// wrapping of it, which names the activity, its event IDs and the
// worker's identity in the first hundred bytes.
func failureText(f *Failure) string {
	text := f.Message
	if f.Cause != "" {
		text = f.Cause
	}
	return strings.ToValidUTF8(text[:min(len(text), maxFailureText)], "")
}

// TurnState is the turn part: the running turn, its record, the ledger
// of delivered chunks, and the model chain's state.
type TurnState struct {
	Active     *ActiveTurn      `json:"active,omitempty"`
	Seq        int              `json:"seq"`
	Last       *TurnRecord      `json:"last,omitempty"`
	Deliveries []DeliveryRecord `json:"deliveries,omitempty"`
	Models     ModelsState      `json:"models"`
	Resets     int              `json:"resets,omitempty"`
	// Held is what the last model step said of the session's budgets
	// and breakers: set while it gets no model call, nil once a step
	// was let through.
	Held *pipeline.Hold `json:"held,omitempty"`
}

// ActiveTurn is the running turn.
type ActiveTurn struct {
	TurnID   string             `json:"turn_id"`
	Messages []pipeline.Inbound `json:"messages"`
	Refs     []msgRef           `json:"refs,omitempty"`
	Text     string             `json:"text"`
	Phase    string             `json:"phase"`
	Step     int                `json:"step"`
	NoAnchor bool               `json:"no_anchor,omitempty"`
	Options  TurnOptions        `json:"options"`
	// Heartbeat is the tick a heartbeat turn answers.
	Heartbeat string `json:"heartbeat,omitempty"`
	// NewTranscript: the first step starts a fresh transcript.
	NewTranscript bool                 `json:"new_transcript,omitempty"`
	Attempts      StepAttempts         `json:"attempts"`
	Rounds        []pipeline.ToolRound `json:"rounds,omitempty"`
	// Calls is the step's tool round while its calls run or wait, and
	// Decisions the state of those that wait for a person.
	Calls     *pipeline.ToolRound `json:"calls,omitempty"`
	Decisions []CallDecision      `json:"decisions,omitempty"`
	// ShowsWaiting: its messages show ⏳ (once a proposal was posted).
	ShowsWaiting bool               `json:"shows_waiting,omitempty"`
	Steered      []pipeline.Inbound `json:"steered,omitempty"`
	// SteeredBacklog were steered in and queued too (steer-backlog).
	SteeredBacklog []pipeline.Inbound `json:"steered_backlog,omitempty"`
	// Waiting is the attempt the step makes once a model cooled down.
	Waiting *TryModel `json:"waiting,omitempty"`
	// Chunks are the reply\'s chunks once the first was delivered (Cut);
	// before, the whole reply, which the first delivery cuts.
	Chunks []string `json:"chunks,omitempty"`
	Cut    bool     `json:"cut,omitempty"`
	Next   int      `json:"next,omitempty"`
	// Slow: the first chunk did not go out at once; the rest go as
	// activities.
	Slow    bool   `json:"slow,omitempty"`
	Stopped string `json:"stopped,omitempty"` // "aborted" or "interrupted"
}

// DeliveryRecord is one delivered chunk.
type DeliveryRecord struct {
	TurnID            string `json:"turn_id"`
	Chunk             int    `json:"chunk"`
	PlatformMessageID string `json:"platform_message_id"`
}

// TurnStart is what the queue hands a turn.
type TurnStart struct {
	Messages      []pipeline.Inbound
	Refs          []msgRef // the messages whose reactions follow the turn
	Text          string
	NoAnchor      bool
	Options       TurnOptions
	NewTranscript bool
	Heartbeat     string
}

// maxCarriedTurnBytes bounds the turn continue-as-new may carry: the
// whole state is one payload, with a size limit, and the rest of the
// state takes most of it at its bounds. A larger turn (a huge reply
// parked) holds the run until it ends.
const maxCarriedTurnBytes = 128 << 10

// Carriable is true while the turn waits for something only a person or
// an operator gives (decisions, a retry), with nothing of its own under
// way: continue-as-new carries it, and the next run goes on with it.
func (a *ActiveTurn) Carriable() bool {
	if a.Stopped != "" || (a.Phase != PhaseWaiting && a.Phase != PhaseParked) {
		return false
	}
	data, err := json.Marshal(a)
	return err == nil && len(data) <= maxCarriedTurnBytes
}

// Compacted answers the end of /compact: a summary that replaced the
// transcript counts as a reset.
func (s *TurnState) Compacted(compacted bool) []Effect {
	if compacted {
		s.Resets++
	}
	return nil
}

// Running is true while a turn runs.
func (s *TurnState) Running() bool { return s.Active != nil }

// TakeSteered hands back the messages steered into the running turn that
// no step read yet (/stop drops them with the rest), so the turn's end
// does not give them back to the queue.
func (s *TurnState) TakeSteered() []pipeline.Inbound {
	if s.Active == nil {
		return nil
	}
	steered := s.Active.Steered
	s.Active.Steered = nil
	return steered
}

// Begin starts a turn: ✍️ on its messages, and its first model step.
func (s *TurnState) Begin(env Env, start TurnStart) []Effect {
	s.Seq++
	a := &ActiveTurn{
		TurnID:   env.Chain + "." + strconv.Itoa(s.Seq),
		Messages: start.Messages, Refs: start.Refs, Text: start.Text,
		Phase: PhaseModel, NoAnchor: start.NoAnchor, Options: start.Options,
		Heartbeat: start.Heartbeat, NewTranscript: start.NewTranscript,
	}
	s.Active = a
	rec := &TurnRecord{TurnID: a.TurnID, StartedAt: env.Now, Outcome: "running", Heartbeat: a.Heartbeat != ""}
	for _, r := range a.Refs {
		rec.MessageIDs = append(rec.MessageIDs, r.ID)
	}
	s.Last = rec
	a.Attempts = StepAttempts{TurnModel: start.Options.Model}
	out := []Effect{Emit{ReactionsWanted{Refs: a.Refs, State: pipeline.ReactionThinking}}}
	return append(out, s.ask(env, s.Models.First(env, &a.Attempts))...)
}

// anchor is the message the reply answers.
func (a *ActiveTurn) anchor() pipeline.Inbound { return a.Messages[len(a.Messages)-1] }

// ask does what the chain's rule decided for the step.
func (s *TurnState) ask(env Env, next Next) []Effect {
	a := s.Active
	switch n := next.(type) {
	case TryModel:
		req := s.request(env)
		n.Apply(&req)
		req.NextModels = a.Attempts.after()
		return []Effect{AskModel{TurnID: a.TurnID, Request: req}}
	case WaitForModel:
		a.Waiting = &n.Then
		return []Effect{Arm{Timer: s.waitTimer(), At: n.Until, Summary: n.Summary}}
	case ResetTranscript:
		s.Resets++
		return append(s.notice(n.Notice), s.ask(env, n.Then)...)
	case GiveUp:
		if n.ErrType == failureCanceled {
			return s.end(env, cmpOr(a.Stopped, "aborted"))
		}
		return s.fail(env, "agent turn failed ("+n.ErrType+")", n.Reply)
	}
	panic(fmt.Sprintf("turn: no way to do %T", next))
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (s *TurnState) waitTimer() TimerID { return TimerID("turn/" + s.Active.TurnID + "/wait") }

// request is the step's model request; the chain's rule sets its model.
func (s *TurnState) request(env Env) pipeline.TurnRequest {
	a := s.Active
	anchor := a.anchor()
	maxSteps := max(env.Settings.MaxSteps, 1)
	req := pipeline.TurnRequest{
		Session: env.Key, TurnID: a.TurnID, ThreadID: anchor.ThreadID, Step: a.Step,
		Text: a.Text, Messages: turnMessages(a.Messages), Group: anchor.ChatType == pipeline.ChatGroup,
		NewTranscript: a.NewTranscript, Rounds: a.Rounds, NoTools: a.Step >= maxSteps-1, Think: a.Options.Think,
		Stream: !a.Options.Muted && a.Heartbeat == "",
	}
	if a.Step == 0 {
		req.ThinkingOn = idsOf(a.Refs)
	}
	return req
}

// Answered answers a model attempt of the running turn.
func (s *TurnState) Answered(env Env, ev ModelAnswered) []Effect {
	a := s.Active
	if a == nil || a.TurnID != ev.TurnID || a.Phase != PhaseModel {
		return nil // an answer to a turn that ended (stopped) or moved on
	}
	if a.Stopped != "" {
		return s.end(env, a.Stopped)
	}
	if ev.Failure != nil {
		next := s.Models.AfterFailure(env, &a.Attempts, ev.Failure)
		s.Last.Fallback = slices.Clone(a.Attempts.Failed)
		out := []Effect{attemptMetric(ev.Model, ev.Failure.Type)}
		if _, moves := next.(TryModel); moves {
			out = append(out, Count{Name: workflows.MetricFallbacks, Tags: map[string]string{"reason": ev.Failure.Type}})
		}
		return append(out, s.ask(env, next)...)
	}
	s.Models.Succeeded(ev.Model)
	s.Held = ev.Result.Held
	a.NewTranscript = false
	if ev.Result.Shown != nil {
		a.Attempts.Shown = ev.Result.Shown
	}
	a.Step++
	rec := s.Last
	rec.Steps, rec.Model = a.Step, ev.Result.Model
	rec.addUsage(ev.Result.Usage)
	rec.ThinkIgnored = rec.ThinkIgnored || ev.Result.ThinkIgnored
	out := []Effect{Emit{UsageReported{Usage: ev.Result.Usage}}, attemptMetric(ev.Model, "")}
	switch {
	case len(ev.Result.ToolCalls) == 0:
		return append(out, s.reply(env, ev.Result.Reply)...)
	case skipsResponse(ev.Result.ToolCalls):
		return append(out, s.reply(env, "")...)
	}
	return append(out, s.runTools(env, pipeline.ToolRound{Text: ev.Result.Reply, Calls: ev.Result.ToolCalls})...)
}

// UsageReported tells the chat's settings what a step cost.
type UsageReported struct{ Usage *pipeline.Usage }

func (UsageReported) isEvent() {}

func (t *TurnRecord) addUsage(u *pipeline.Usage) {
	if u == nil {
		return
	}
	sum := *u
	if t.Usage != nil {
		sum = t.Usage.Add(*u)
	}
	t.Usage = &sum
}

// WaitOver answers the turn's wait for a model to cool down.
func (s *TurnState) WaitOver(env Env) []Effect {
	a := s.Active
	if a == nil || a.Waiting == nil {
		return nil
	}
	next := *a.Waiting
	a.Waiting = nil
	return s.ask(env, next)
}

// notice is a notice of the session under the turn's anchor; none for a
// heartbeat turn (no message to answer) or a muted chat.
func (s *TurnState) notice(text string) []Effect {
	a := s.Active
	if a.Heartbeat != "" || a.Options.Muted {
		return nil
	}
	anchor := a.anchor()
	return []Effect{Emit{NoticeWanted{MessageID: anchor.MessageID, ThreadID: anchor.ThreadID, Text: text}}}
}

// fail ends the turn failed: ❌ on its messages and the reply a user
// reads.
func (s *TurnState) fail(env Env, what, reply string) []Effect {
	s.Last.Error = what
	out := []Effect{Emit{ReactionsWanted{Refs: s.Active.Refs, State: pipeline.ReactionError}}}
	if reply != "" {
		out = append(out, s.notice(reply)...)
	}
	env.logger().Error("Turn failed", "turn_id", s.Active.TurnID, "what", what)
	return append(out, s.end(env, "failed")...)
}

// end closes the turn however it ended.
func (s *TurnState) end(env Env, outcome string) []Effect {
	a := s.Active
	s.Active = nil
	rec := s.Last
	rec.Outcome, rec.FinishedAt = outcome, env.Now
	out := []Effect{Cancel{TurnID: a.TurnID}, Disarm{Timer: TimerID("turn/" + a.TurnID + "/wait")}}
	if len(a.Steered) > 0 && a.Stopped != "aborted" {
		out = append(out, Emit{SteeredLeft{Messages: a.Steered}})
	}
	return append(out, Emit{TurnEnded{Record: *rec}})
}

// SteeredLeft are messages steered into a turn that ended before a step
// took them: the queue takes them as a follow-up.
type SteeredLeft struct{ Messages []pipeline.Inbound }

func (SteeredLeft) isEvent() {}

// Stop stops the running turn (a /stop: "aborted"; an interrupt:
// "interrupted"): its effects are cancelled, and it ends as soon as the
// step it waits for answers, or at once when it waits for nothing of its
// own.
func (s *TurnState) Stop(env Env, how string) []Effect {
	a := s.Active
	if a == nil || a.Stopped != "" {
		return nil
	}
	a.Stopped = how
	out := []Effect{Cancel{TurnID: a.TurnID}, Emit{ReactionsWanted{Refs: a.Refs, State: pipeline.ReactionNone}}}
	if a.Phase == PhaseWaiting {
		// A stopped turn's calls never run: their proposals are closed.
		out = append(out, Emit{WithdrawProposals{TurnID: a.TurnID, Reason: "the turn was " + how}})
	}
	if a.Phase != PhaseModel {
		return append(out, s.end(env, how)...)
	}
	return out
}

func turnMessages(msgs []pipeline.Inbound) []pipeline.TurnMessage {
	out := make([]pipeline.TurnMessage, len(msgs))
	for i, in := range msgs {
		out[i] = pipeline.TurnMessage{MessageID: in.MessageID, SenderID: in.SenderID, SenderName: in.SenderName, Text: in.TextWithMedia(), At: in.ReceivedAt}
	}
	return out
}

func idsOf(refs []msgRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.ID
	}
	return out
}

func skipsResponse(calls []pipeline.ToolCall) bool {
	for _, c := range calls {
		if c.Name == pipeline.SkipResponseTool {
			return true
		}
	}
	return false
}

func (s *TurnState) String() string {
	if s.Active == nil {
		return "no turn"
	}
	return fmt.Sprintf("turn %s (%s, step %d)", s.Active.TurnID, s.Active.Phase, s.Active.Step)
}

// Turn outcomes that are not a failure.
const (
	outcomeAnswered    = "answered"
	outcomeSilent      = "silent"
	outcomeMuted       = "muted"
	outcomeHeartbeatOK = "heartbeat_ok"
)

// reply delivers the turn's answer: dressed (prefix, usage footer), cut
// into chunks, the first in a local activity.
func (s *TurnState) reply(env Env, reply string) []Effect {
	a := s.Active
	text, deliver := pipeline.NormalizeReply(reply)
	shownBlocks := a.Attempts.Shown != nil && len(a.Attempts.Shown.Blocks) > 0
	if deliver && shownBlocks {
		text = pipeline.AfterShown(text, a.Attempts.Shown.Text)
	}
	switch {
	case a.Heartbeat != "" && pipeline.HeartbeatAck(reply):
		return s.end(env, outcomeHeartbeatOK)
	case deliver && a.Options.Muted:
		return append([]Effect{Emit{ReactionsWanted{Refs: a.Refs, State: DoneState(env)}}}, s.end(env, outcomeMuted)...)
	case deliver && text != "":
		text = dress(env, text, s.Last, a.Options)
	}
	// The first chunk's delivery cuts the reply with its platform's rules
	// (pipeline.Delivery.Whole); the rest follow once it is out.
	a.Chunks, a.Next, a.Cut = nil, 0, false
	if deliver && text != "" {
		a.Chunks = []string{text}
	}
	s.Last.Chunks = len(a.Chunks)
	a.Phase = PhaseDelivering
	return s.deliverNext(env)
}

// deliverNext delivers the next chunk, or ends the turn when none is
// left.
func (s *TurnState) deliverNext(env Env) []Effect {
	a := s.Active
	if a.Next >= len(a.Chunks) {
		return s.answered(env)
	}
	i, anchor := a.Next, a.anchor()
	d := Deliver{TurnID: a.TurnID, Fast: i == 0 && !a.Slow, Delivery: pipeline.Delivery{
		Session:        env.Key,
		IdempotencyKey: fmt.Sprintf("%s/%s/%d", env.Key.WorkflowID(), a.TurnID, i),
		ThreadID:       anchor.ThreadID,
		Text:           a.Chunks[i],
		Index:          i,
		Total:          len(a.Chunks),
		Whole:          i == 0 && !a.Cut,
	}}
	shownBlocks := a.Attempts.Shown != nil && len(a.Attempts.Shown.Blocks) > 0
	if i == 0 && !a.NoAnchor && !shownBlocks {
		d.Delivery.ReplyTo = anchor.MessageID
	}
	if i == 0 && a.Attempts.Shown != nil && a.Attempts.Shown.PreviewID != "" {
		d.Delivery.Replaces = a.Attempts.Shown.PreviewID
	}
	if !d.Fast && a.Heartbeat == "" && len(a.Messages) > 0 {
		// An activity's delivery may be retried for hours, or parked:
		// what it answers goes with it, so a late one says so.
		last := a.Messages[len(a.Messages)-1]
		d.Delivery.Answers = &pipeline.TurnMessage{MessageID: last.MessageID, SenderName: last.SenderName, At: last.ReceivedAt}
		d.Delivery.Group = anchor.ChatType == pipeline.ChatGroup
	}
	if i == len(a.Chunks)-1 {
		// The last chunk carries the done reaction: the reactions part
		// attaches it and delivers the chunk.
		return []Effect{Emit{LastChunkReady{Deliver: d, Refs: a.Refs, State: DoneState(env)}}}
	}
	return []Effect{d}
}

// LastChunkReady hands a reply's last chunk to the reactions part, which
// makes it carry the done reaction (ReactionsState.Carry) and delivers
// it.
type LastChunkReady struct {
	Deliver Deliver
	Refs    []msgRef
	State   pipeline.ReactionState
}

func (LastChunkReady) isEvent() {}

// Delivered answers a chunk of the running turn's reply.
func (s *TurnState) Delivered(env Env, ev ChunkDelivered) []Effect {
	a := s.Active
	if a == nil || a.TurnID != ev.TurnID || a.Phase != PhaseDelivering || ev.Index != a.Next {
		return nil
	}
	if a.Stopped == "aborted" {
		return append([]Effect{Emit{ReactionsWanted{Refs: a.Refs, State: pipeline.ReactionNone}}}, s.end(env, "aborted")...)
	}
	if ev.Failure != nil {
		if ev.Index == 0 && !a.Slow && !ev.Failure.NonRetryable {
			// The local activity's one attempt failed: the chunk goes
			// on as an activity, with the same idempotency key.
			a.Slow = true
			env.logger().Warn("First chunk not delivered at once; retrying it as an activity", "turn_id", a.TurnID, "error", ev.Failure)
			return s.redeliver(env)
		}
		return s.park(env, ev.Failure)
	}
	s.recordDelivery(DeliveryRecord{TurnID: a.TurnID, Chunk: ev.Index, PlatformMessageID: ev.Delivered.PlatformMessageID})
	s.Last.Delivered++
	if ev.Index == 0 && !a.Cut {
		a.Cut = true
		a.Chunks = append(a.Chunks[:1], ev.Delivered.Rest...)
		s.Last.Chunks = len(a.Chunks)
	}
	a.Next++
	channel := map[string]string{"channel": env.Key.Channel}
	out := []Effect{Count{Name: workflows.MetricDeliveries, Tags: map[string]string{"channel": env.Key.Channel, "outcome": "delivered"}}}
	if anchor := a.anchor(); ev.Index == 0 && a.Heartbeat == "" && !anchor.ReceivedAt.IsZero() {
		out = append(out, Time{Name: workflows.MetricFirstChunk, Tags: channel, Took: env.Now.Sub(anchor.ReceivedAt)})
	}
	return append(out, s.deliverNext(env)...)
}

// redeliver delivers the current chunk again as an activity.
func (s *TurnState) redeliver(env Env) []Effect {
	out := s.deliverNext(env)
	for i, e := range out {
		switch e := e.(type) {
		case Deliver:
			e.Fast = false
			out[i] = e
		case Emit:
			if last, ok := e.Event.(LastChunkReady); ok {
				last.Deliver.Fast = false
				out[i] = Emit{last}
			}
		}
	}
	return out
}

// park keeps a reply that could not be delivered until an operator asks
// for it again (`replyflow retry`): ❌ on its messages, and the phase
// that `sessions --stuck` finds.
func (s *TurnState) park(env Env, f *Failure) []Effect {
	a := s.Active
	a.Phase = PhaseParked
	s.Last.Outcome = "delivery_failed"
	s.Last.Error = fmt.Sprintf("delivery of chunk %d/%d failed (%s): %s", a.Next+1, len(a.Chunks), f.Type, failureText(f))
	env.logger().Error("Delivery parked: fix the cause, then `replyflow retry` this session", "turn_id", a.TurnID, "chunk", a.Next+1, "error", f)
	return []Effect{
		Emit{ReactionsWanted{Refs: a.Refs, State: pipeline.ReactionError}},
		Count{Name: workflows.MetricDeliveries, Tags: map[string]string{"channel": env.Key.Channel, "outcome": "failed"}},
		Count{Name: workflows.MetricParked, Tags: map[string]string{"channel": env.Key.Channel}},
	}
}

// Retry answers RetryAsked: a parked reply goes on from the chunk that
// failed, with the same idempotency key.
func (s *TurnState) Retry(env Env, ev RetryAsked) []Effect {
	a := s.Active
	if a == nil || a.Phase != PhaseParked {
		env.logger().Info("Retry ignored: nothing is parked", "by", ev.By)
		return nil
	}
	env.logger().Info("Retrying a parked delivery", "turn_id", a.TurnID, "by", ev.By, "reason", ev.Reason)
	a.Phase, a.Slow = PhaseDelivering, true
	s.Last.Outcome, s.Last.Error = "running", ""
	return s.deliverNext(env)
}

// answered ends a turn whose reply is out: the sender may go on without
// a mention for a while (sticky credits).
func (s *TurnState) answered(env Env) []Effect {
	a := s.Active
	shownBlocks := a.Attempts.Shown != nil && len(a.Attempts.Shown.Blocks) > 0
	if len(a.Chunks) == 0 && !shownBlocks {
		return s.end(env, outcomeSilent)
	}
	var out []Effect
	if a.Heartbeat == "" {
		out = append(out, Emit{Answered{TurnID: a.TurnID, Messages: a.Messages, Thread: a.anchor().ThreadID}})
	}
	if len(a.Chunks) == 0 {
		out = append(out, Emit{ReactionsWanted{Refs: a.Refs, State: DoneState(env)}})
	}
	return append(out, s.end(env, outcomeAnswered)...)
}

// Answered tells engagement a reply went out in a thread (sticky
// credits for its senders).
type Answered struct {
	TurnID   string
	Messages []pipeline.Inbound
	Thread   string
}

func (Answered) isEvent() {}

func (s *TurnState) recordDelivery(d DeliveryRecord) {
	s.Deliveries = append(s.Deliveries, d)
	if over := len(s.Deliveries) - maxDeliveries; over > 0 {
		s.Deliveries = append([]DeliveryRecord(nil), s.Deliveries[over:]...)
	}
}

// IsBotMessage is true for a platform message the session delivered.
func (s *TurnState) IsBotMessage(platformID string) bool {
	for _, d := range s.Deliveries {
		if d.PlatformMessageID == platformID {
			return true
		}
	}
	return false
}

// dress puts the reply prefix in front of a reply and the usage footer
// (and a note that /think was ignored) under it.
func dress(env Env, text string, rec *TurnRecord, opts TurnOptions) string {
	if tmpl := env.Settings.ReplyPrefix; tmpl != "" {
		provider, _, _ := strings.Cut(rec.Model, "/")
		text = pipeline.RenderReplyPrefix(tmpl, map[string]string{"model": rec.Model, "provider": provider, "think": string(opts.Think)}) + text
	}
	var footer []string
	switch {
	case opts.Usage != pipeline.UsageTokens && opts.Usage != pipeline.UsageFull:
	case rec.Usage == nil:
		footer = append(footer, "— usage not reported by "+rec.Model)
	default:
		footer = append(footer, pipeline.UsageFooter(*rec.Usage, opts.Usage))
	}
	if opts.ThinkNote && rec.ThinkIgnored && opts.Think != "" && opts.Think != pipeline.ThinkOff {
		footer = append(footer, "— /think "+string(opts.Think)+" was ignored: "+rec.Model+" takes no reasoning effort")
	}
	if len(footer) > 0 {
		text += "\n\n" + strings.Join(footer, "\n")
	}
	return text
}
