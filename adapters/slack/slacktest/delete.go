package slacktest

// Delete deletes a message as a workspace admin (or its author) would: it
// is gone from the channel, and chat.update on it answers
// message_not_found. The fake sends no message_deleted event: the adapter
// does not subscribe to it.
func (s *Server) Delete(channel, ts string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.channels[channel]; st != nil {
		delete(st.messages, ts)
	}
	s.touch()
}
