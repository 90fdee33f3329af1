// Package pipeline holds replyflow's pure rules: the Inbound envelope that
// every adapter produces, the session, thread and buffer keys derived from
// platform IDs (and a sender's own session in a group, by scope), the
// commands and inline directives people type (ParseMessage), reaction
// states, reply
// chunking and the reply prefix, and the request and result types that the
// session workflow exchanges with its activities.
//
// Everything here is a pure function of its arguments, so the workflow (which
// must be deterministic) and the gateway and activities (which do I/O) can
// share it. It must not import Temporal, a platform or model SDK, or do any
// I/O, read the clock or use randomness.
package pipeline
