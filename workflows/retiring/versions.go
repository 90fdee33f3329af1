package retiring

import (
	"slices"
	"strconv"

	"go.temporal.io/sdk/workflow"
)

// Sessions are long-lived: a run that started under older code replays its
// history on any worker, so every change that alters the commands a session
// issues is taken only by runs that recorded its version. Each change ID is
// read once, at the start of a run, before the first blocking call; a run
// keeps the behaviour it started with until it continues as new, and the
// next run takes the newest. Add a change here, never edit an old one, and
// record a history that goes through the new path (make record-histories).
const (
	// changeHardening: debounce windows and the gate buffer
	// flush at a maximum wait and size; /stop and interrupts cancel the
	// context-overflow retry and win over its result; ✍️ is cleared as
	// soon as an aborted turn's model step has stopped; the fence-safe
	// chunker.
	changeHardening = "hardening-2026-11"
	// changeSlack: a Slack reply is cut into chunks that fit
	// Slack's limit once rendered as mrkdwn; a button press refused
	// (someone not allowed, a decided proposal) is told to the presser
	// alone where the platform can (Delivery.PrivateTo, PrivateVia); the
	// edit of a decided proposal names its thread; a member count sent
	// with a message weighs in the engagement rules.
	changeSlack = "slack-2026-11"
	// changeSecurity: a sender the adapter verified as an
	// owner (Inbound.SenderIsOwner, a web chat token issued with
	// --owner) is an owner for commands, decisions and the permission
	// gate; /model picks only a model of the chain or of
	// REPLYFLOW_MODEL_ALLOW unless the sender is an owner.
	changeSecurity = "security-2026-11"
	// changeControl: messages are read with
	// pipeline.ParseMessageV2 and the configured reset words (/help,
	// /whoami, /usage, /context, /compact, /think, /verbose, /send,
	// /export, /heartbeat, inline directives); turns run with the chat's
	// options (reasoning effort, tool lines, usage footer, mute, reply
	// prefix); heartbeat ticks run heartbeat turns; the idle TTL counts
	// from the last thing a person did.
	changeControl = "control-2026-11"
	// changeCost: a run reads only this change's version when
	// it takes it (every older change is then taken too); the idle timer
	// lives as long as the run, not one per turn; a reply's first chunk
	// goes out in a local activity, and its last chunk's delivery sets
	// the messages' done (or cleared) reaction; the pending clears share
	// one timer; the transient states (debouncing, gating, delivering on
	// the fast path) are not published as search attributes; tool
	// results reach later model steps through the store.
	changeCost = "cost-2026-11"
	// changeStream: model steps may stream (TurnRequest.Stream,
	// unless muted or a heartbeat turn); what a stream showed (a preview,
	// blocks) is carried from a failed attempt to the next and from step
	// to step, and the reply finishes it: the first chunk edits the
	// preview, or only what follows the blocks is delivered. And a model
	// attempt whose worker was lost (a heartbeat timeout) is asked again
	// of the same model instead of counting as the model's Timeout
	// (askModel), up to maxWorkerLosses a step.
	changeStream = "stream-2026-11"
	// changePromises: a decision reaches exactly its own proposal however
	// many are kept, and a decided proposal keeps no tool arguments; a
	// busy chat continues as new between turns, carrying a turn that
	// waits for decisions or is parked (it resumes in the next run);
	// /stop drops what was steered into the stopped turn; a gated batch
	// sent to the gate counts as busy at once; the reload signal reads
	// the settings again; a model attempt whose worker stopped
	// (WorkerStopped) is asked again like a lost worker, and a turn
	// whose tool results are gone (ToolResultsMissing) ends without
	// falling back through the chain.
	changePromises = "promises-2026-11"
	// changeMoveOn is read at a quiet point of a run that began before
	// the newest change: a run that records it continues as new there,
	// so an open session takes the newest release at its next quiet
	// point instead of at its next idle expiry or history bound. (Its
	// name is that of the release that introduced it, which its markers
	// in recorded histories carry.)
	changeMoveOn = "promises-2026-11/move-on"
	// changeMembers: a member (a sender who is not an owner) may turn
	// /think, /verbose, /usage and /queue down but not up, as a command
	// or inside a message, unless REPLYFLOW_MEMBER_SETTINGS opens one
	// (pipeline.Directives.OwnersOnly); a run that should continue as
	// new starts no other turn (holdsForCarry); a run that began before
	// it moves on at its next quiet point like a run of an older release.
	changeMembers = "members-2026-11"
	// changeRetire is read at a quiet point of a run of the members
	// release, the last release of this workflow type: a run that
	// records it continues as new there into the chat session workflow
	// (package workflows/session, ChatSessionName), carrying its state,
	// and this type has no open run once every session has passed a
	// quiet point. Like changeMoveOn, its ID names the workflow task.
	changeRetire = "retire-2026-11"
)

// versions are the changes this run took.
type versions struct {
	hardened bool
	slack    bool
	security bool
	control  bool
	cost     bool
	stream   bool
	promises bool
	members  bool
}

// changesInOrder are the changes, oldest first.
var changesInOrder = []string{changeHardening, changeSlack, changeSecurity, changeControl, changeCost, changeStream, changePromises, changeMembers}

// NewestChange is the newest change, the retirement of this workflow
// type: a build with BuiltBefore set to it is the release before the
// chat session workflow (replyflow-bench measures it beside the current
// code).
func NewestChange() string { return changeRetire }

// Changes are the change IDs, oldest first: what BuiltBefore accepts.
func Changes() []string { return append(slices.Clone(changesInOrder), changeRetire) }

// BuiltBefore, when set at link time to a change ID
// (-ldflags "-X github.com/replyflow/replyflow/workflows/retiring.BuiltBefore=control-2026-11"),
// builds a worker whose sessions behave as the release before that
// change: they record neither it nor any newer one, as that release's code
// did not know them. It exists for the rolling-upgrade test
// (cmd/replyflow-chaos), which runs such a build as the old version and
// today's as the new one; a release never sets it. An unknown ID takes
// every change.
var BuiltBefore string

// readVersions records (or, on replay, reads back) the change versions of
// this run.
func (s *runEnv) readVersions() {
	taken := func(change string) bool {
		if i := slices.Index(changesInOrder, BuiltBefore); i >= 0 && slices.Index(changesInOrder, change) >= i {
			return false
		}
		return workflow.GetVersion(s.ctx, change, workflow.DefaultVersion, 1) >= 1
	}
	// The newest change first: a run that takes it takes every older one,
	// and records one marker instead of one a change. A run that began
	// before it finds no marker for it here (GetVersion answers the
	// default without recording) and reads the older ones as it did.
	if taken(changeMembers) {
		s.v = versions{hardened: true, slack: true, security: true, control: true, cost: true, stream: true, promises: true, members: true}
		return
	}
	if taken(changePromises) {
		s.v = versions{hardened: true, slack: true, security: true, control: true, cost: true, stream: true, promises: true}
		return
	}
	if taken(changeStream) {
		s.v = versions{hardened: true, slack: true, security: true, control: true, cost: true, stream: true}
		return
	}
	if taken(changeCost) {
		s.v = versions{hardened: true, slack: true, security: true, control: true, cost: true}
		return
	}
	s.v.hardened = taken(changeHardening)
	s.v.slack = taken(changeSlack)
	s.v.security = taken(changeSecurity)
	s.v.control = taken(changeControl)
}

// movesOn reports, at a quiet point of a run that began before the newest
// change, whether it continues as new there to take the newest release.
// A run replaying a history recorded before this check existed finds no
// marker and stays; a run executing now records the marker and moves.
//
// The change ID names the workflow task (its started event's ID, which a
// replay sees as the live run did): the SDK remembers the first answer
// for an ID, and a run that replayed its older quiet points (answered
// "stay", no marker there) must still move at a new one. Several checks
// in one task share the task's answer. A count of checks would not do:
// how often the main loop passes a quiet point within a task can differ
// between the live run and a replay (a local activity's result arrives
// at another moment), and a marker read under another number is a
// nondeterminism failure.
//
// A run of the members release moves on to the chat session workflow
// instead (changeRetire), unless this build is one from before it.
func (s *runEnv) movesOn() bool {
	if slices.Contains(changesInOrder, BuiltBefore) || (s.v.members && BuiltBefore == changeRetire) {
		return false
	}
	task := workflow.GetInfo(s.ctx).GetCurrentHistoryLength()
	if s.v.members {
		return workflow.GetVersion(s.ctx, changeRetire+"/"+strconv.Itoa(task), workflow.DefaultVersion, 1) >= 1
	}
	return workflow.GetVersion(s.ctx, changeMoveOn+"/"+strconv.Itoa(task), workflow.DefaultVersion, 1) >= 1
}

// StartedWorkflow is the workflow type the gateway starts a session
// with: the chat session workflow, or this one in a build from before
// changeRetire (BuiltBefore), which the rolling-upgrade test runs as the
// old version.
func StartedWorkflow() string {
	if BuiltBefore == changeRetire || slices.Contains(changesInOrder, BuiltBefore) {
		return WorkflowName
	}
	return ChatSessionName
}
