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
//   - A session that waits idle moves on at its next message, or at once
//     when `replyflow reload --all` wakes it.
//   - Once `replyflow releases` shows no open run of a retiring release,
//     its code and histories are deleted; the replay tests then keep
//     only the histories of releases that may still be open.
type Release struct {
	// WorkflowType is the registered type of its runs.
	WorkflowType string
	// Live: the gateway starts sessions on it. Every other release is
	// retiring.
	Live bool
	// Code and Histories are where its code and recorded histories live,
	// relative to the repository: what retiring it deletes.
	Code, Histories string
}

// Releases are the releases this build's workers serve, the live one
// first.
func Releases() []Release {
	return []Release{
		{WorkflowType: ChatSessionName, Live: true, Code: "workflows/session", Histories: "workflows/session/testdata/histories"},
		{WorkflowType: WorkflowName, Code: "workflows/retiring (and retiring.StartedWorkflow in gateway/chain.go, the BuiltBefore builds in cmd)", Histories: "workflows/testdata/histories"},
	}
}
