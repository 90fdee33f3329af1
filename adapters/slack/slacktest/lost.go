package slacktest

import "net/http"

// Lost answers: Slack did the call, and the client never heard so. A
// client that retries such a write blindly does it twice; these faults
// are for testing that it does not.

// AnswerLost does the method, then answers 503, as Slack's edge sometimes
// does after the write went through.
func AnswerLost() Fault {
	return Fault{Status: http.StatusServiceUnavailable, Applied: true}
}

// HungUp does the method, then closes the connection without an answer,
// as a network lost between Slack and the client does.
func HungUp() Fault { return Fault{Applied: true, Hangup: true} }

// hangUp closes the request's connection without writing a byte; the
// request body was read already, so the client sees its request sent and
// no response (Go's transport does not resend a POST after that).
func hangUp(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("slacktest: the server cannot hang up (no http.Hijacker)")
	}
	conn, _, err := hj.Hijack()
	if err == nil {
		_ = conn.Close()
	}
}
