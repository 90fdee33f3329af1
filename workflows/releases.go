package workflows

// Release is one release of the session workflow: a workflow type whose
// runs a worker serves. A release's code, its frozen copies of rules and
// its recorded histories go together: they are deleted in one change
// once no run of it is open (`replyflow releases` says when).
//
// The rule every release follows:
//
//   - A new release is a new workflow type. The gateway starts sessions
//     on it; the release before gets one last change: a run of it moves
//     on at its next quiet point (between turns, or while its turn waits
//     for a person) by continuing as new into the new type, carrying its
//     state. No run stays on an old release longer than its running turn.
//   - A session that waits idle moves on at its next message, at once
//     when `replyflow releases --move-on` wakes it, and otherwise completes
//     when its idle TTL (REPLYFLOW_SESSION_IDLE_TTL, 24 h by default)
//     runs out. So once the live release has served for the idle TTL
//     plus the longest turn, no run of the release before is open unless
//     the TTL was raised; `replyflow releases` checks it.
//   - Once `replyflow releases` shows no open run of a retiring release,
//     its code and histories are deleted; the replay tests then keep
//     only the histories of releases that may still be open. Its entry
//     stays (Deleted) while the live release reads the state of runs
//     that moved on from it, and a worker of a build that deleted it
//     does not start beside an open run of it.
//   - A run of the live release that began as a move from a retiring one
//     reads the retiring one's state whenever it is replayed, for as long
//     as it is open, and a busy session may keep that run open for long
//     after the retiring release has none (until it idles out or its
//     history continues as new), unless asked to move on (`replyflow
//     releases --move-on`, the move-on signal): then it continues as
//     new at its next quiet point into a run that reads no retiring
//     state. What reads that state (MovedCode) and the histories of the
//     move go only once no such run is open either; `replyflow
//     releases` counts them.
type Release struct {
	// WorkflowType is the registered type of its runs.
	WorkflowType string
	// Live: the gateway starts sessions on it. Every other release is
	// retiring, or deleted.
	Live bool
	// Code and Histories are where its code and recorded histories live,
	// relative to the repository: what retiring it deletes. Both are
	// empty once deleted: no worker of this build serves its runs, and a
	// worker does not start beside an open one (workers.CheckServedTypes).
	Code, Histories string
	// MovedCode and MovedHistories are what the live release keeps to
	// read the state of runs that moved on from this one, and the
	// recorded histories of such moves: deleted once no run of the live
	// release that began as such a move is open.
	MovedCode, MovedHistories string
}

// Deleted: this build has no code of the release; only what reads the
// state of runs that moved on from it may be left.
func (r Release) Deleted() bool { return !r.Live && r.Code == "" }

// Releases are the releases this build knows, the live one first: the
// ones its workers serve, and the deleted ones whose moved runs the live
// release may still read.
func Releases() []Release {
	return []Release{
		{WorkflowType: ChatSessionName, Live: true, Code: "workflows/session", Histories: "workflows/session/testdata/histories"},
		{
			// The release before chat-session, deleted once none of its
			// runs could be open.
			WorkflowType:   WorkflowName,
			MovedCode:      retiredMovedCode,
			MovedHistories: "workflows/session/testdata/histories/retire-2026-11",
		},
	}
}

// retiredMovedCode is what the live session reads of a run that moved on
// from the deleted release "session": its state's types and their
// reshaping.
const retiredMovedCode = "workflows/state.go and workflows/parts_state.go (its state); " +
	"workflows/session/from_old.go and RetiredParams (the move into the live type); " +
	"the WorkflowName constant (workflows/names.go)"
