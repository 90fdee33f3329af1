package workflows

// The payloads of the signals an operator sends a session. Each is
// optional: a signal without one is taken all the same, and what it
// carries goes to the session's log, so the Temporal UI and the worker's
// log say who asked and why.

// RetryRequest is the optional payload of the retry signal.
type RetryRequest struct {
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// ReloadRequest is the optional payload of the reload signal.
type ReloadRequest struct {
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// MoveOnRequest is the optional payload of the move-on signal.
type MoveOnRequest struct {
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
}
