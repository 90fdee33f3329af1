// Package harness runs replyflow the way production does, for the
// benchmark and chaos programs: a Temporal dev server, and the replyflow
// worker and gateway as separate processes of the real binary, configured
// through the environment against fake platforms (the Bot API, Slack,
// Discord).
// It can kill any of them with SIGKILL and start them again.
//
// It is for programs that measure or attack the system; replyflow itself
// must not import it.
package harness
