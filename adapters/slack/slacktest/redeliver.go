package slacktest

import "time"

// Redeliver sends a queued envelope again at once, acked or not, as Slack
// does when an ack came too late or was lost on the way: the same
// envelope_id and payload (so the same event_id), retry_attempt one
// higher and retry_reason "timeout". Waiting out AckTimeout gives the
// same redelivery only when the client is slower than the timeout, which
// a test cannot arrange; this makes it happen on purpose. The envelope
// counts as unacked until it is acked again (and is redelivered after
// AckTimeout as any other, up to MaxRetries). It reports false when the
// envelope is unknown or no socket is open.
func (s *Server) Redeliver(envelopeID string) bool {
	s.mu.Lock()
	var found *pendingEnvelope
	for _, p := range s.socket.envelopes {
		if p.env.EnvelopeID == envelopeID {
			found = p
		}
	}
	if found == nil || len(s.socket.conns) == 0 {
		s.mu.Unlock()
		return false
	}
	conn := s.socket.conns[len(s.socket.conns)-1]
	found.acked = false
	found.env.RetryAttempt++
	found.env.RetryReason = "timeout"
	found.sentAt = time.Now()
	env := found.env
	s.touch()
	s.mu.Unlock()
	// A failed write leaves the envelope unacked: redeliverLoop sends it
	// again on the next socket after AckTimeout.
	_ = conn.write(env)
	return true
}
