package telegramtest

// Delete deletes a message as a user or an admin would: it is gone from
// the chat, and editing it answers "message to edit not found". Telegram
// tells a bot nothing of a deletion, so no update is queued.
func (s *Server) Delete(chatID int64, id int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.chats[chatID]
	if st == nil {
		return
	}
	if m := st.messages[id]; m != nil && m.From.IsBot && m.ReplyTo != 0 {
		st.repliedTo[m.ReplyTo]--
	}
	delete(st.messages, id)
	s.touch()
}
