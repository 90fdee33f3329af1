package session

import (
	"fmt"
	"strings"

	"github.com/replyflow/replyflow/pipeline"
)

// ApprovalsWanted asks the proposals part to post a proposal for each
// call (the turn waits, ⏳ on its messages, until each is decided).
type ApprovalsWanted struct {
	TurnID string
	Calls  []pipeline.ToolCall
	Origin pipeline.Inbound
}

// DisengageAsked: the model called the disengage tool.
type DisengageAsked struct{}

func (ApprovalsWanted) isEvent() {}
func (DisengageAsked) isEvent()  {}

// CallDecision is where one call that needs approval stands.
type CallDecision struct {
	CallID  string `json:"call_id"`
	Decided bool   `json:"decided,omitempty"`
	// Refused is the result a rejected or expired call gives the model.
	Refused *pipeline.ToolResult `json:"refused,omitempty"`
}

// runTools starts a step's tool calls: those that need a person's
// approval are proposed first, all at once, and the turn waits for
// every decision; then the calls run one after another, in the order the
// model asked (a tool is not assumed to be independent of the one
// before).
func (s *TurnState) runTools(env Env, round pipeline.ToolRound) []Effect {
	a := s.Active
	a.Calls = &round
	var needApproval []pipeline.ToolCall
	a.Decisions = nil
	for _, c := range round.Calls {
		if c.RequiresApproval {
			needApproval = append(needApproval, c)
			a.Decisions = append(a.Decisions, CallDecision{CallID: c.ID})
		}
	}
	if len(needApproval) == 0 {
		return s.nextCall(env)
	}
	a.Phase, a.ShowsWaiting = PhaseWaiting, false
	return []Effect{Emit{ApprovalsWanted{TurnID: a.TurnID, Calls: needApproval, Origin: a.anchor()}}}
}

// Posted answers a proposal of the turn's that is out: its messages show
// ⏳ from the first, as the person asked sees the proposal.
func (s *TurnState) Posted(turnID string) []Effect {
	a := s.Active
	if a == nil || a.TurnID != turnID || a.Phase != PhaseWaiting || a.ShowsWaiting {
		return nil
	}
	a.ShowsWaiting = true
	return []Effect{Emit{ReactionsWanted{Refs: a.Refs, State: pipeline.ReactionWaitingUser}}}
}

// Decided answers a decision on one of the waiting calls; refused is the
// result a rejected or expired call gives the model (nil: approved).
func (s *TurnState) Decided(env Env, turnID, callID string, refused *pipeline.ToolResult) []Effect {
	a := s.Active
	if a == nil || a.TurnID != turnID || a.Phase != PhaseWaiting {
		return nil
	}
	waiting := false
	for i := range a.Decisions {
		if a.Decisions[i].CallID == callID {
			a.Decisions[i].Decided, a.Decisions[i].Refused = true, refused
		}
		waiting = waiting || !a.Decisions[i].Decided
	}
	if waiting {
		return nil
	}
	a.Phase = PhaseModel
	return append([]Effect{Emit{ReactionsWanted{Refs: a.Refs, State: pipeline.ReactionThinking}}}, s.nextCall(env)...)
}

// nextCall runs the step's next call that has no result yet, or asks
// the next step once every call has one.
func (s *TurnState) nextCall(env Env) []Effect {
	a := s.Active
	round := a.Calls
	for len(round.Results) < len(round.Calls) {
		call := round.Calls[len(round.Results)]
		if d := a.decision(call.ID); d != nil && d.Refused != nil {
			round.Results = append(round.Results, *d.Refused)
			continue
		}
		if call.Name == pipeline.DisengageTool {
			round.Results = append(round.Results, pipeline.ToolResult{CallID: call.ID, Name: call.Name, Output: "disengaged: you answer again only when addressed"})
			return append([]Effect{Emit{DisengageAsked{}}}, s.nextCall(env)...)
		}
		return []Effect{RunTool{TurnID: a.TurnID, Step: a.Step, Invocation: pipeline.ToolInvocation{Session: env.Key, TurnID: a.TurnID, Call: call, StoreResult: true}}}
	}
	return s.nextStep(env)
}

func (a *ActiveTurn) decision(callID string) *CallDecision {
	for i := range a.Decisions {
		if a.Decisions[i].CallID == callID {
			return &a.Decisions[i]
		}
	}
	return nil
}

// ToolDone answers a tool call of the running turn.
func (s *TurnState) ToolDone(env Env, ev ToolRan) []Effect {
	a := s.Active
	if a == nil || a.TurnID != ev.TurnID || a.Calls == nil || ev.Step != a.Step {
		return nil
	}
	if a.Stopped != "" {
		return s.end(env, a.Stopped)
	}
	a.Calls.Results = append(a.Calls.Results, ev.Result)
	return s.nextCall(env)
}

// nextStep asks the model again with the step's results (by reference:
// they are in the store) and whatever was steered in meanwhile.
func (s *TurnState) nextStep(env Env) []Effect {
	a := s.Active
	round := *a.Calls
	a.Calls, a.Decisions = nil, nil
	var out []Effect
	if a.Options.Verbose && !a.Options.Muted {
		out = append(out, s.toolLines(env, round))
	}
	a.Rounds = append(a.Rounds, round.References())
	if a.Attempts.Shown != nil {
		// The next step writes an answer of its own: it edits the same
		// preview, and numbers its blocks after these.
		next := *a.Attempts.Shown
		next.Text = ""
		a.Attempts.Shown = &next
	}
	if injected := append(a.Steered, a.SteeredBacklog...); len(injected) > 0 {
		texts := make([]string, len(injected))
		for i, m := range injected {
			texts[i] = m.TextWithMedia()
		}
		a.Text = pipeline.RenderSteered(a.Text, texts)
		a.Messages = append(a.Messages, injected...)
		steered := refsOf(injected...)
		a.Refs = append(a.Refs, steered...)
		a.Steered, a.SteeredBacklog = nil, nil
		out = append(out, Emit{ReactionsWanted{Refs: steered, State: pipeline.ReactionThinking}})
	}
	return append(out, s.ask(env, s.Models.First(env, &a.Attempts))...)
}

// toolLines are a round's /verbose lines under the turn's anchor.
func (s *TurnState) toolLines(env Env, round pipeline.ToolRound) Effect {
	a := s.Active
	lines := make([]string, 0, len(round.Calls))
	for i, call := range round.Calls {
		var res pipeline.ToolResult
		if i < len(round.Results) {
			res = round.Results[i]
		}
		lines = append(lines, pipeline.ToolLine(call, res))
	}
	anchor := a.anchor()
	return Deliver{TurnID: a.TurnID + "/tools", Delivery: pipeline.Delivery{
		Session:        env.Key,
		IdempotencyKey: fmt.Sprintf("%s/%s/tools/%d", env.Key.WorkflowID(), a.TurnID, a.Step),
		ThreadID:       anchor.ThreadID,
		ReplyTo:        anchor.MessageID,
		Text:           strings.Join(lines, "\n"),
		Total:          1,
	}}
}

// View is what the queue may know of the running turn; the zero value
// is no turn.
func (s *TurnState) View() RunningTurn {
	a := s.Active
	if a == nil {
		return RunningTurn{}
	}
	return RunningTurn{
		TurnID: a.TurnID, AtModel: a.Phase == PhaseModel, Thread: a.anchor().ThreadID,
		Interrupted: a.Stopped == "interrupted", Aborted: a.Stopped == "aborted",
		Steered: len(a.Steered) + len(a.SteeredBacklog), SteeredBytes: sizeOf(a.Steered) + sizeOf(a.SteeredBacklog),
	}
}

// Steer takes messages steered into the running turn; its next step
// reads them. A backlog message is also queued (steer-backlog), so a turn
// that ends before a step reads it leaves it to the queue alone.
func (s *TurnState) Steer(msgs []pipeline.Inbound, backlog bool) []Effect {
	a := s.Active
	switch {
	case a == nil:
	case backlog:
		a.SteeredBacklog = append(a.SteeredBacklog, msgs...)
	default:
		a.Steered = append(a.Steered, msgs...)
	}
	return nil
}
