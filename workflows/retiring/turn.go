package retiring

import (
	"strconv"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

const defaultDeliveryDeadline = 10 * time.Minute

// turns is the part that answers: it owns TurnState (the queue, the running
// turn, the model override and cooldowns, the turn counter and last turn,
// the delivery ledger) and the turn's coroutine: model steps with
// fallback, tools, delivery and parking. It reaches the other parts only
// through the narrow views below, which the main loop wires.
type turns struct {
	*runEnv
	st *TurnState
	// cancelTurn cancels the running turn's model step or tools
	// (interrupt mode, /stop).
	cancelTurn    workflow.CancelFunc
	reactions     turnReactions
	engagement    turnEngagement
	approvals     turnApprovals
	notice        func(messageID, threadID, text string)
	queueSettings func() pipeline.QueueSettings
	chat          turnChat
}

// turnChat is what a turn asks of the control part (the chat settings
// and heartbeats).
type turnChat interface {
	turnOptions(d *pipeline.Directives) TurnOptions
	addUsage(u *pipeline.Usage)
	heartbeatDone(tickID, outcome, turnID string)
	touched()
}

// turnReactions is what a turn asks of the reactions part.
type turnReactions interface {
	react(refs []msgRef, state pipeline.ReactionState)
	clearLater(refs []msgRef, delay time.Duration)
	clearStopped(refs []msgRef)
	tracked(messageID string) (msgRef, bool)
	// carry, carried and doneState: the last chunk's delivery sets the
	// final reaction (runs with changeCost, reactions_shared.go).
	carry(ctx workflow.Context, refs []msgRef, state pipeline.ReactionState) []pipeline.ReactionChange
	carried(changes []pipeline.ReactionChange, failed []string)
	doneState() pipeline.ReactionState
}

// turnEngagement is what a turn asks of the engagement part.
type turnEngagement interface {
	engagedText(text string, now time.Time, group bool) string
	grantSticky(msgs []pipeline.Inbound, thread string)
	disengage()
}

// turnApprovals is what a turn asks of the proposals part.
type turnApprovals interface {
	propose(ctx workflow.Context, turnID string, call pipeline.ToolCall, origin pipeline.Inbound) string
	waitForDecisions(ctx workflow.Context, ids []string, aborted func() bool) error
	close(ctx workflow.Context, id string) pipeline.ToolResult
}

// running is true while a turn runs.
func (s *turns) running() bool { return s.st.Active != nil }

// queued is true while a batch waits for a turn.
func (s *turns) queued() bool { return len(s.st.Queue) > 0 }

// ready is true when no turn runs and a batch waits for one.
func (s *turns) ready() bool { return s.st.Active == nil && len(s.st.Queue) > 0 }

// primaryModel is the model a turn tries first.
func (s *turns) primaryModel() string {
	if chain, _ := s.chain(); len(chain) > 0 {
		return chain[0]
	}
	return ""
}

// seq is the number of the latest turn.
func (s *turns) seq() int { return s.st.TurnSeq }

// requestNewTranscript makes the next turn start a fresh transcript (/new).
func (s *turns) requestNewTranscript() { s.st.NewTranscript = true }

// setModel is the chat's /model override; "" goes back to the chain.
func (s *turns) setModel(model string) { s.st.ModelOverride = model }

// startTurn takes the next batch (in collect mode, everything queued for
// the same thread) off the queue and runs a turn for it in a coroutine.
func (s *turns) startTurn() {
	batches := s.takeTurnBatches()
	var msgs []pipeline.Inbound
	texts := make([]string, len(batches))
	for i, b := range batches {
		msgs = append(msgs, b.Messages...)
		texts[i] = b.Text()
	}
	text := texts[0]
	if batches[0].Queue.Mode == pipeline.QueueCollect && batches[0].Queued {
		text = pipeline.RenderCollected(texts)
	}
	var opts *TurnOptions
	if s.v.control {
		o := s.chat.turnOptions(mergedDirectives(batches))
		opts = &o
	}
	refs := refsOf(msgs...)
	text = s.engagement.engagedText(text, workflow.Now(s.ctx), msgs[len(msgs)-1].ChatType == pipeline.ChatGroup)
	if s.st.AbortedLastRun {
		text = pipeline.AbortedNotice + "\n\n" + text
		s.st.AbortedLastRun = false
	}
	if o := s.st.Overflow; o != nil {
		text = pipeline.RenderOverflow(o.Dropped, o.Summaries) + "\n\n" + text
		for _, id := range o.MessageIDs {
			if ref, ok := s.reactions.tracked(id); ok {
				refs = append(refs, ref)
			}
		}
		s.st.Overflow = nil
	}
	a := s.begin(msgs, batches[0].NoAnchor, opts)
	s.reactions.react(refs, pipeline.ReactionThinking)
	s.launch(a, text, refs)
}

// begin makes msgs the running turn.
func (s *turns) begin(msgs []pipeline.Inbound, noAnchor bool, opts *TurnOptions) *ActiveTurn {
	s.st.TurnSeq++
	s.counters.Turns++
	now := workflow.Now(s.ctx)
	a := &ActiveTurn{
		TurnID:    workflow.GetInfo(s.ctx).FirstRunID + "." + strconv.Itoa(s.st.TurnSeq),
		Messages:  msgs,
		Phase:     PhaseModel,
		NoAnchor:  noAnchor,
		StartedAt: now,
		Options:   opts,
	}
	s.st.Active = a
	s.attrsDirty = true
	return a
}

// launch runs the turn a in a coroutine.
func (s *turns) launch(a *ActiveTurn, text string, refs []msgRef) {
	rec := &TurnRecord{TurnID: a.TurnID, StartedAt: a.StartedAt, Outcome: "running", Heartbeat: a.Heartbeat != ""}
	for _, r := range refs {
		rec.MessageIDs = append(rec.MessageIDs, r.ID)
	}
	s.st.LastTurn = rec
	workflow.Go(s.ctx, func(ctx workflow.Context) { s.runTurn(ctx, a, rec, text, refs) })
}

// startHeartbeat runs a heartbeat turn for tick with the checklist: no
// message anchors it and no reaction shows it; a reply that only
// acknowledges the heartbeat is recorded, not sent.
func (s *turns) startHeartbeat(tick pipeline.HeartbeatTick, checklist string) {
	o := s.chat.turnOptions(nil)
	o.Verbose = false // tool lines would speak where the heartbeat stays silent
	msg := pipeline.Inbound{
		Channel: s.key.Channel, Account: s.key.Account, ChatID: s.key.Chat,
		MessageID: "heartbeat/" + tick.ID, SenderID: "heartbeat", SenderName: "heartbeat",
		Text: pipeline.RenderHeartbeatPrompt(checklist, tick.ScheduledAt), ReceivedAt: tick.ScheduledAt,
	}
	a := s.begin([]pipeline.Inbound{msg}, true, &o)
	a.Heartbeat = tick.ID
	s.launch(a, msg.Text, nil)
}

// runTurn runs the model steps of a turn, then delivers the reply chunk by
// chunk, recording each platform message ID before the next chunk.
func (s *turns) runTurn(ctx workflow.Context, a *ActiveTurn, rec *TurnRecord, text string, refs []msgRef) {
	defer s.endTurn(ctx, a, rec)
	p := &TurnProgress{Text: text, Refs: refs, Anchor: len(a.Messages) - 1}
	a.Progress = p
	newTranscript := s.st.NewTranscript
	s.st.NewTranscript = false
	reply, ok := s.modelSteps(ctx, a, rec, p, idsOf(refs), newTranscript)
	if !ok {
		return
	}
	s.deliverReply(ctx, a, rec, reply, a.Messages[p.Anchor], p.Refs)
}

// endTurn closes the turn, however it ended: steered messages it never
// took are queued, and the session learns the turn is over.
func (s *turns) endTurn(ctx workflow.Context, a *ActiveTurn, rec *TurnRecord) {
	s.requeueSteered(a)
	s.st.Active, s.cancelTurn = nil, nil
	rec.FinishedAt = workflow.Now(ctx)
	s.attrsDirty = true
	s.turnEnded(rec.Outcome, rec.Duration())
	if a.Heartbeat != "" {
		s.chat.heartbeatDone(a.Heartbeat, heartbeatOutcome(rec.Outcome), a.TurnID)
	} else if s.v.control {
		s.chat.touched()
	}
}

// modelSteps asks the models, step after step, running the tools each
// step calls, until a step answers without tools; it returns that answer,
// or false when the turn ended otherwise (stopped, failed).
func (s *turns) modelSteps(ctx workflow.Context, a *ActiveTurn, rec *TurnRecord, p *TurnProgress, thinkingOn []string, newTranscript bool) (string, bool) {
	opts := activeOptions(a)
	anchor := a.Messages[p.Anchor]
	var result pipeline.TurnResult
	maxSteps := max(s.settings.MaxSteps, 1)
	for {
		req := pipeline.TurnRequest{
			Session: s.key, TurnID: a.TurnID, ThreadID: anchor.ThreadID, Step: a.Step,
			Text: p.Text, Messages: turnMessages(a.Messages), ThinkingOn: thinkingOn,
			Group: anchor.ChatType == pipeline.ChatGroup, NewTranscript: newTranscript,
			Rounds: p.Rounds, NoTools: a.Step >= maxSteps-1, Think: opts.Think,
		}
		if s.v.stream {
			req.Stream = !opts.Muted && a.Heartbeat == ""
			req.Shown = a.Shown
		}
		newTranscript = false
		stepCtx, cancel := workflow.WithCancel(ctx)
		s.cancelTurn = cancel
		var err error
		result, err = s.askModels(stepCtx, req, rec)
		cancel()
		if err != nil && modelErrorType(err) == pipeline.ErrContextOverflow && !p.Reset && !(s.v.hardened && stopped(a)) {
			// A fresh session, told to the user, and one more try, which
			// a /stop or an interrupt cancels like any step.
			p.Reset = true
			s.counters.Resets++
			s.turnNotice(a, anchor, pipeline.ReplyContextReset)
			req.NewTranscript = true
			retryCtx := ctx
			if s.v.hardened {
				var cancelRetry workflow.CancelFunc
				retryCtx, cancelRetry = workflow.WithCancel(ctx)
				s.cancelTurn = cancelRetry
				defer cancelRetry()
			}
			result, err = s.askModels(retryCtx, req, rec)
		}
		if s.v.hardened && stopped(a) {
			// A stop wins over whatever the step returned: an answer
			// that raced the cancellation is not delivered.
			s.endStopped(a, rec, p.Refs)
			return "", false
		}
		if err != nil {
			if stopped(a) {
				rec.Outcome = stopOutcome(a)
				// A cancelled step may still show ✍️ until it sees the
				// cancellation at its next heartbeat: clear after that.
				s.reactions.clearLater(p.Refs, s.settings.TurnHeartbeatTimeout.D())
				return "", false
			}
			s.failTurn(rec, p.Refs, "agent turn failed", err)
			s.turnNotice(a, anchor, s.failureReply(err))
			return "", false
		}
		if s.v.stream && result.Shown != nil {
			a.Shown = result.Shown
		}
		a.Step++
		rec.Steps, rec.Model = a.Step, result.Model
		if s.v.control {
			addUsage(rec, result.Usage)
			s.chat.addUsage(result.Usage)
			rec.ThinkIgnored = rec.ThinkIgnored || result.ThinkIgnored
		}
		if len(result.ToolCalls) == 0 {
			break
		}
		if skipsResponse(result.ToolCalls) {
			result.Reply = "" // the model chose silence
			break
		}
		if a.Shown != nil {
			// The next step writes an answer of its own: it edits the
			// same preview, and numbers its blocks after these.
			next := *a.Shown
			next.Text = ""
			a.Shown = &next
		}
		var ok bool
		if thinkingOn, ok = s.toolStep(ctx, a, p, pipeline.ToolRound{Text: result.Reply, Calls: result.ToolCalls}, nil); !ok {
			if !s.v.hardened {
				rec.Outcome = stopOutcome(a)
				s.reactions.clearLater(p.Refs, s.settings.TurnHeartbeatTimeout.D())
			} else {
				s.endStopped(a, rec, p.Refs)
			}
			return "", false
		}
	}
	return result.Reply, true
}

// toolStep runs a step's tool calls (proposed is non-nil for a step that
// a previous run carried with its proposals posted) and takes what was
// steered in meanwhile; it returns the messages the next step shows ✍️
// on, or false when the turn was stopped (the caller ends it).
func (s *turns) toolStep(ctx workflow.Context, a *ActiveTurn, p *TurnProgress, round pipeline.ToolRound, proposed []CallProposal) ([]string, bool) {
	opts := activeOptions(a)
	anchor := a.Messages[p.Anchor]
	toolCtx, cancelTools := workflow.WithCancel(ctx)
	s.cancelTurn = cancelTools
	var waited bool
	round.Results, waited = s.runTools(toolCtx, a, p, round, anchor, proposed)
	cancelTools()
	if opts.Verbose && !opts.Muted && !stopped(a) {
		s.showToolLines(ctx, a, anchor, round)
	}
	if stopped(a) {
		return nil, false
	}
	if s.v.cost {
		// The results are in the store: later steps carry references,
		// so the turn's history does not grow with each step by every
		// earlier result.
		round = round.References()
	}
	p.Rounds = append(p.Rounds, round)
	injected := append(a.Steered, a.SteeredBacklog...)
	a.Steered, a.SteeredBacklog = nil, nil
	var thinkingOn []string
	if waited {
		thinkingOn = idsOf(p.Refs) // back from ⏳ to ✍️
	}
	if len(injected) > 0 {
		p.Text = pipeline.RenderSteered(p.Text, textsOf(injected))
		a.Messages = append(a.Messages, injected...)
		p.Refs = append(p.Refs, refsOf(injected...)...)
		thinkingOn = idsOf(refsOf(injected...))
		s.reactions.react(refsOf(injected...), pipeline.ReactionThinking)
	}
	return thinkingOn, true
}

// failureReply is what the user is told when a turn fails.
func (s *turns) failureReply(err error) string {
	if s.v.promises && errorType(err) == pipeline.ErrToolResultsMissing {
		return pipeline.ReplyToolResultsMissing
	}
	return failureReplyOf(modelErrorType(err))
}

// failureReplyOf is what the user is told when a turn's models failed
// with errType.
func failureReplyOf(errType string) string {
	switch errType {
	case pipeline.ErrFormat:
		return pipeline.ReplyFormatError
	case pipeline.ErrContentFilter:
		return pipeline.ReplyContentFilter
	}
	return pipeline.ReplyNoModel(errType)
}

// failTurn marks the batch ❌ and records why, so the state query and the
// UI's current details say what failed.
func (s *turns) failTurn(rec *TurnRecord, refs []msgRef, what string, err error) {
	rec.Outcome, rec.Error = "failed", what
	if t := errorType(err); t != "" {
		rec.Error += " (" + t + ")"
	}
	s.log.Error("Turn failed", "turn_id", rec.TurnID, "what", what, "error", err)
	s.reactions.react(refs, pipeline.ReactionError)
}

func turnMessages(msgs []pipeline.Inbound) []pipeline.TurnMessage {
	out := make([]pipeline.TurnMessage, len(msgs))
	for i, in := range msgs {
		out[i] = pipeline.TurnMessage{MessageID: in.MessageID, SenderID: in.SenderID, SenderName: in.SenderName, Text: in.TextWithMedia(), At: in.ReceivedAt}
	}
	return out
}

func textsOf(msgs []pipeline.Inbound) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.TextWithMedia()
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

// isBotMessage is true for a platform message the session delivered.
func (s *turns) isBotMessage(platformID string) bool {
	for _, d := range s.st.Deliveries {
		if d.PlatformMessageID == platformID {
			return true
		}
	}
	return false
}
