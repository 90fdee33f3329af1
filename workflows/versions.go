package workflows

import (
	"slices"

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
	// changeHardening (issue 14): debounce windows and the gate buffer
	// flush at a maximum wait and size; /stop and interrupts cancel the
	// context-overflow retry and win over its result; ✍️ is cleared as
	// soon as an aborted turn's model step has stopped; the fence-safe
	// chunker.
	changeHardening = "hardening-2026-11"
	// changeSlack (issue 15): a Slack reply is cut into chunks that fit
	// Slack's limit once rendered as mrkdwn; a button press refused
	// (someone not allowed, a decided proposal) is told to the presser
	// alone where the platform can (Delivery.PrivateTo, PrivateVia); the
	// edit of a decided proposal names its thread; a member count sent
	// with a message weighs in the engagement rules.
	changeSlack = "slack-2026-11"
	// changeSecurity (issue 17): a sender the adapter verified as an
	// owner (Inbound.SenderIsOwner, a web chat token issued with
	// --owner) is an owner for commands, decisions and the permission
	// gate; /model picks only a model of the chain or of
	// REPLYFLOW_MODEL_ALLOW unless the sender is an owner.
	changeSecurity = "security-2026-11"
	// changeControl (issue 18): messages are read with
	// pipeline.ParseMessageV2 and the configured reset words (/help,
	// /whoami, /usage, /context, /compact, /think, /verbose, /send,
	// /export, /heartbeat, inline directives); turns run with the chat's
	// options (reasoning effort, tool lines, usage footer, mute, reply
	// prefix); heartbeat ticks run heartbeat turns; the idle TTL counts
	// from the last thing a person did.
	changeControl = "control-2026-11"
)

// versions are the changes this run took.
type versions struct {
	hardened bool
	slack    bool
	security bool
	control  bool
}

// changesInOrder are the changes, oldest first.
var changesInOrder = []string{changeHardening, changeSlack, changeSecurity, changeControl}

// BuiltBefore, when set at link time to a change ID
// (-ldflags "-X github.com/replyflow/replyflow/workflows.BuiltBefore=control-2026-11"),
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
	s.v.hardened = taken(changeHardening)
	s.v.slack = taken(changeSlack)
	s.v.security = taken(changeSecurity)
	s.v.control = taken(changeControl)
}
