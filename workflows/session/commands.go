package session

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/replyflow/replyflow/pipeline"
)

// CommandGiven: a person's message is a command (Parsed.Command is set).
// The part that routes MessageAccepted emits it once the sender is
// permitted and their open window is closed; Command answers it.
type CommandGiven struct {
	In     pipeline.Inbound
	Parsed pipeline.Parsed
}

// StopAsked: /stop or a stop word. The running turn stops (its model
// step is cancelled, no further chunk is sent, a parked delivery is given
// up) and everything waiting is dropped (the queue, the open windows), so
// the next message starts afresh.
type StopAsked struct{}

// NewTranscriptAsked: /new, /reset or a reset word; the next turn starts
// a new transcript.
type NewTranscriptAsked struct{}

// ModelChosen: /model chose the chat's model, strict (no fallback); ""
// goes back to the configured chain.
type ModelChosen struct{ Model string }

// QueuePatched: /queue changed the chat's queue settings: Patch over the
// chat's override, or Reset back to the configured ones.
type QueuePatched struct {
	Patch *pipeline.QueuePatch
	Reset bool
}

// ActivationChosen: an owner set the chat's activation mode.
type ActivationChosen struct{ Mode string }

// DecisionAsked: a person decided a proposal in the chat, with /approve
// or /reject or with a button. The proposals part checks and applies it
// (OwnerVerified: the adapter verified the decider as an owner) and
// answers under MessageID: a command with its outcome or refusal
// (AnswerWanted), a button with a refusal only, to the presser alone
// (NoticeWanted with To and Via).
type DecisionAsked struct {
	Decision      pipeline.Decision
	OwnerVerified bool
	Button        bool
	MessageID     string
	ThreadID      string
	To, Via       string
	// Pressed is the message that carried the pressed button, where the
	// platform says ("" for a command).
	Pressed string
}

// CompactionFinished: /compact ended (Compacted: a summary replaced the
// transcript); the turns it held may start.
type CompactionFinished struct{ Compacted bool }

func (CommandGiven) isEvent()       {}
func (StopAsked) isEvent()          {}
func (NewTranscriptAsked) isEvent() {}
func (ModelChosen) isEvent()        {}
func (QueuePatched) isEvent()       {}
func (ActivationChosen) isEvent()   {}
func (DecisionAsked) isEvent()      {}
func (CompactionFinished) isEvent() {}

// CommandView is what commands read of the other parts' state; the loop
// fills it from them for each command.
type CommandView struct {
	// Saved are the chat settings other parts keep: the /model override
	// (turns), the /queue override (intake) and the activation override
	// (engagement). A command that changes one saves them all.
	Saved pipeline.SessionSettings
	// Model is the model the next step asks first.
	Model string
	// Activation is the activation mode in force.
	Activation string
	// Status is /status's answer but for the lines the control part
	// keeps (Heartbeat, Muted); its TurnsTotal also answers /usage.
	Status pipeline.StatusInfo
	// Busy: a turn runs or waits, or messages wait in a window or for
	// the gate; /compact would race it.
	Busy bool
	// Observed and ObservedTokens are the group messages observed for
	// the next turn (/context).
	Observed       int
	ObservedTokens int
}

// Parse reads a message as the session does, with the configured reset
// words (the settings are recorded in history, so a replay reads the
// same).
func Parse(env Env, text string) pipeline.Parsed {
	return pipeline.ParseMessage(text, pipeline.ParseOptions{ResetWords: env.Settings.ResetWords})
}

// commandRun is one command being answered: it changes only the control
// and replies parts, and tells the others by events.
type commandRun struct {
	env  Env
	c    *ControlState
	r    *RepliesState
	view CommandView
	in   pipeline.Inbound
	p    pipeline.Parsed
	// saved are the other parts' saved settings with this command's
	// changes; changed: the chat's settings are to be saved.
	saved   pipeline.SessionSettings
	changed bool
	out     []Effect
}

// Command answers a command from state, without the model, and out of
// band: a running turn or a full queue does not delay it.
func Command(env Env, c *ControlState, r *RepliesState, view CommandView, in pipeline.Inbound, p pipeline.Parsed) []Effect {
	r.Commands++
	x := &commandRun{env: env, c: c, r: r, view: view, in: in, p: p, saved: view.Saved}
	text := x.run()
	if x.changed {
		x.out = append(x.out, r.Save(env, c.Saved(x.saved))...)
	}
	if text != "" {
		x.out = append(x.out, r.Answer(env, refOf(in), text)...)
	}
	return x.out
}

// run does the command and returns its answer; "" when the answer comes
// later (an activity, another part) or was given.
func (x *commandRun) run() string {
	p := x.p
	if p.Error != "" {
		return "⚠️ " + p.Error
	}
	switch p.Command {
	case pipeline.CommandStop:
		x.emit(StopAsked{})
		return pipeline.AbortedReply
	case pipeline.CommandNew:
		x.emit(NewTranscriptAsked{})
		return pipeline.NewTranscriptReply
	case pipeline.CommandClaim:
		x.out = append(x.out, x.r.Claim(x.env, x.in, p.Code)...)
		return ""
	case pipeline.CommandDecide:
		return x.decide()
	case pipeline.CommandActivation:
		return x.activation()
	case pipeline.CommandModel:
		return x.model()
	case pipeline.CommandQueue:
		return x.queue()
	case pipeline.CommandStatus:
		info := x.view.Status
		info.Heartbeat, info.Muted = x.c.HeartbeatLine(), x.c.Muted
		return pipeline.RenderStatus(info)
	case pipeline.CommandDirectives, pipeline.CommandThink, pipeline.CommandVerbose, pipeline.CommandUsage:
		if !p.DirectivesOnly {
			return x.showSetting()
		}
		return x.directives()
	case pipeline.CommandHelp:
		return pipeline.RenderHelp(x.env.IsOwner(x.in), pipeline.ClosedToMembers(x.env.Settings.MemberSettings))
	case pipeline.CommandWhoami:
		return pipeline.RenderWhoami(sender(x.in), x.env.IsOwner(x.in))
	case pipeline.CommandSend:
		return x.send()
	case pipeline.CommandContext, pipeline.CommandCompact, pipeline.CommandExport, pipeline.CommandHeartbeat:
		return x.work()
	}
	return "Send /help for what I understand here."
}

func (x *commandRun) emit(ev Event) { x.out = append(x.out, Emit{Event: ev}) }

func sender(in pipeline.Inbound) string { return in.Channel + ":" + in.SenderID }

// decide hands /approve or /reject to the proposals part, which answers.
func (x *commandRun) decide() string {
	d := *x.p.Decision
	d.By = sender(x.in)
	if id, sessionSender, ok := pipeline.ParseProposalRef(d.ID); ok && sessionSender != "" {
		// A reference that names a session (p1@ana) reaches it where the
		// session scope routes it (pipeline.Inbound.SessionIn).
		if sessionSender != x.env.Key.Sender {
			theirs := x.env.Key
			theirs.Sender = sessionSender
			return fmt.Sprintf("⚠️ Proposal %s is in session %s, not this one (the session scope may have changed since it was posted), so nothing was decided; an operator can decide it with replyflow %s %s %s.",
				d.ID, theirs.WorkflowID(), d.Decision, theirs.WorkflowID(), id)
		}
		d.ID = id
	}
	x.emit(DecisionAsked{Decision: d, OwnerVerified: x.in.SenderIsOwner, MessageID: x.in.MessageID, ThreadID: x.in.ThreadID})
	return ""
}

func (x *commandRun) activation() string {
	mode := x.p.Activation
	switch {
	case mode == "":
		return "Activation: " + x.view.Activation + ". Owners change it with /activation mention|smart|gated|always."
	case !x.env.IsOwner(x.in):
		return "⚠️ Only owners may change the activation mode."
	}
	x.emit(ActivationChosen{Mode: mode})
	x.saved.Activation, x.changed = mode, true
	return "Activation for this chat: " + mode + "."
}

func (x *commandRun) model() string {
	chain := strings.Join(x.env.Settings.Models, " → ")
	switch p := x.p; {
	case p.ModelReset:
		x.setModel("")
		return "Model back to the default chain: " + chain + "."
	case p.Model != "" && !x.env.IsOwner(x.in) && !slices.Contains(OpenModels(x.env), p.Model):
		return "⚠️ /model may choose only " + strings.Join(OpenModels(x.env), ", ") + " here; owners may choose any model."
	case p.Model != "":
		x.setModel(p.Model)
		return "Model for this chat: " + p.Model + " (no fallback while it is chosen; /model default undoes it)."
	}
	return "Model: " + x.view.Model + ". Chain: " + chain + ". Change it with /model provider/model."
}

func (x *commandRun) setModel(model string) {
	x.emit(ModelChosen{Model: model})
	x.saved.ModelOverride, x.changed = model, true
}

func (x *commandRun) queue() string {
	p := x.p
	switch {
	case p.QueueReset:
		x.emit(QueuePatched{Reset: true})
		x.saved.Queue, x.changed = nil, true
		return "Queue settings back to the defaults: " + x.queueSettings().Describe() + "."
	case p.Queue != nil:
		if refusal := RefuseDirectives(x.env, x.in, pipeline.Directives{Queue: p.Queue}, false); refusal != "" {
			return refusal
		}
		x.patchQueue(p.Queue)
		return "Queue settings for this chat: " + x.queueSettings().Describe() + "."
	}
	return "Queue settings: " + x.queueSettings().Describe() + ". Change them with /queue <mode> [debounce:2s] [cap:25] [drop:old|new|summarize]."
}

func (x *commandRun) patchQueue(patch *pipeline.QueuePatch) {
	x.emit(QueuePatched{Patch: patch})
	x.saved.Queue, x.changed = x.saved.Queue.Merge(patch), true
}

// queueSettings are the configured queue settings under the chat's
// override, this command's change included.
func (x *commandRun) queueSettings() pipeline.QueueSettings {
	return x.saved.Queue.Apply(x.env.Settings.Queue)
}

// directives sets a message of directives only for the session.
func (x *commandRun) directives() string {
	d := x.p.Directives
	if refusal := RefuseDirectives(x.env, x.in, d, false); refusal != "" {
		return refusal
	}
	if d.Model != nil {
		x.setModel(*d.Model)
	}
	if d.Queue != nil {
		x.patchQueue(d.Queue)
	}
	x.c.Apply(d)
	x.changed = true
	return "Set for this chat: " + d.Describe() + "."
}

// showSetting answers /think, /verbose or /usage alone.
func (x *commandRun) showSetting() string {
	switch x.p.Command {
	case pipeline.CommandThink:
		return "Reasoning effort: " + string(cmp.Or(x.c.Think, pipeline.ThinkOff)) + ". Change it with /think off|low|medium|high."
	case pipeline.CommandVerbose:
		return "Tool lines: " + onOff(x.c.Verbose) + ". Change them with /verbose on|off."
	case pipeline.CommandUsage:
		return pipeline.RenderUsageTotals(x.c.UsageTotal, x.view.Status.TurnsTotal, x.c.UsageMode)
	}
	return "Send /help for what I understand here."
}

// send is /send: owners mute or unmute every reply in the chat.
func (x *commandRun) send() string {
	on := x.p.Send
	switch {
	case on == nil && x.c.Muted:
		return "Replies in this chat are muted: turns run, nothing is sent. Owners unmute with /send on."
	case on == nil:
		return "Replies in this chat are sent. Owners mute them with /send off."
	case !x.env.IsOwner(x.in):
		return "⚠️ Only owners may mute or unmute this chat."
	}
	x.c.Muted, x.changed = !*on, true
	if x.c.Muted {
		return "Muted: turns still run, but no reply is sent here until /send on."
	}
	return "Unmuted: replies are sent here again."
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// PressButton hands a button press on a proposal to the proposals part;
// an action that names no decision is ignored, and one on another
// session's proposal is refused to the presser alone.
func PressButton(env Env, in pipeline.Inbound) []Effect {
	d, ok, refusal := pressed(env, in)
	if !ok {
		env.logger().Warn("Unknown button action ignored", "action", in.Action)
		return nil
	}
	if refusal != nil {
		env.logger().Warn("Button press for another session refused", "action", in.Action, "sender", in.SenderID)
		return []Effect{Emit{NoticeWanted{MessageID: cmp.Or(in.ReplyTo, in.MessageID), ThreadID: in.ThreadID, Text: "⚠️ " + refusal.Error(), To: in.SenderID, Via: in.ReplyToken}}}
	}
	return []Effect{Emit{DecisionAsked{
		Decision:      d,
		OwnerVerified: in.SenderIsOwner,
		Button:        true,
		MessageID:     cmp.Or(in.ReplyTo, in.MessageID),
		ThreadID:      in.ThreadID,
		To:            in.SenderID,
		Via:           in.ReplyToken,
		Pressed:       in.ReplyTo,
	}}}
}

// OpenModels are the models anyone may pick with /model: the chain and
// REPLYFLOW_MODEL_ALLOW, in that order, without repeats. Every other
// model is for owners, so a stranger cannot switch a chat to a costlier
// model than the operator chose.
func OpenModels(env Env) []string {
	var open []string
	for _, m := range append(slices.Clone(env.Settings.Models), env.Settings.ModelAllow...) {
		if !slices.Contains(open, m) {
			open = append(open, m)
		}
	}
	return open
}

// RefuseDirectives is the answer to a message whose directives its
// sender may not give ("" when it may run): for someone who is not an
// owner, a /model outside the open models, or a setting raised that only
// owners raise (members may turn any down; REPLYFLOW_MEMBER_SETTINGS
// opens some). inline: the directives came inside a message for a turn,
// which is not sent either.
func RefuseDirectives(env Env, in pipeline.Inbound, d pipeline.Directives, inline bool) string {
	if env.IsOwner(in) {
		return ""
	}
	if d.Model != nil && !slices.Contains(OpenModels(env), *d.Model) {
		return "⚠️ /model may choose only " + strings.Join(OpenModels(env), ", ") + " here; owners may choose any model. Nothing was sent to the model."
	}
	closed := d.OwnersOnly(env.Settings.MemberSettings)
	switch {
	case len(closed) == 0:
		return ""
	case inline:
		return pipeline.RefuseOwnersOnly(closed) + " Your message was not sent to the model: send it again without them."
	}
	return pipeline.RefuseOwnersOnly(closed)
}
