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
//     only the histories of releases that may still be open.
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
	// retiring.
	Live bool
	// Code and Histories are where its code and recorded histories live,
	// relative to the repository: what retiring it deletes.
	Code, Histories string
	// MovedCode and MovedHistories are what the live release keeps to
	// read the state of runs that moved on from this one, and the
	// recorded histories of such moves: deleted once no run of the live
	// release that began as such a move is open.
	MovedCode, MovedHistories string
}

// Releases are the releases this build's workers serve, the live one
// first.
func Releases() []Release {
	return []Release{
		{WorkflowType: ChatSessionName, Live: true, Code: "workflows/session", Histories: "workflows/session/testdata/histories"},
		{
			WorkflowType: WorkflowName, Code: retiringCode,
			Histories: "workflows/testdata/histories and the retiring side of the move " +
				"(workflows/session/testdata/histories/retire-2026-11/rolling_upgrade_moves_on_run1.json.gz)",
			MovedCode:      retiringMovedCode,
			MovedHistories: "the rest of workflows/session/testdata/histories/retire-2026-11 (the live side of the move)",
		},
	}
}

// retiringCode is everything that serves only the retiring release's own
// runs, so that its deletion is one change: the package, the frozen rule
// copies in pipeline, and the builds and tests that play an older
// release.
const retiringCode = "workflows/retiring; " +
	"pipeline/chunk_v1.go; pipeline.ParseMessage, folded into ParseMessageV2 under its name; " +
	"retiring.StartedWorkflow in gateway/chain.go; the BuiltBefore builds in cmd and the rolling-upgrade test's older release " +
	"(cmd/replyflow-chaos/upgrade_test.go, which then plays the live release's own change)"

// retiringMovedCode is what the live session reads of a run that moved on
// from the retiring release: its state's types and their reshaping.
const retiringMovedCode = "workflows/state.go and workflows/parts_state.go (its state); " +
	"workflows/session/from_old.go and RetiredParams (the move into the live type)"
