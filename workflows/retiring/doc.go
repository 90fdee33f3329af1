// Package retiring is the session workflow type "session" frozen at its
// last release (members-2026-11, with its one last change,
// retire-2026-11): a run of it moves on into the chat session workflow
// (workflows/session) at its next quiet point, continuing as new with its
// state. The gateway starts no session on it; workers serve it only so
// that open runs can reach that point.
//
// Nothing here changes but to fix a bug in an open run, and then only
// behind workflow.GetVersion (versions.go). It is deleted, with its
// recorded histories (workflows/testdata/histories), its change IDs and
// the build switch BuiltBefore, once `replyflow releases` shows no open
// run of the type: see docs/upgrading.md.
//
// The code is deterministic workflow code under the rules of package
// workflows; the names it shares with the chat session come from there
// (aliases.go).
package retiring
