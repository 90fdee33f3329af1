package webchat

import "sync"

// MaxStreamsPerSender bounds the event streams one signed-in sender holds
// open at once. Each stream holds a connection, a goroutine and a
// subscription to its chat; a person has a tab or a few open (a phone,
// a laptop, a reloaded page whose old stream has not closed yet), and 8
// leaves them room while one token can no longer hold a thousand.
//
// Streams in none mode have no sender to count them by (none mode
// answers loopback only), and an all-chats token is a trusted front end
// that relays the streams of many users through one token: neither is
// bounded here.
const MaxStreamsPerSender = 8

// MaxUploadsPerSender bounds the uploads one signed-in sender has in
// flight at once. An upload holds its file in memory while it is read
// and kept (up to REPLYFLOW_MEDIA_MAX_BYTES, and its base64 besides), so
// without a bound one token could make the gateway hold that a thousand
// times over. A person sends files one after another (the page sends one
// at a time); 2 leaves room for a retry whose first try is still being
// read. None mode and all-chats tokens are not bounded here, as for
// streams.
const MaxUploadsPerSender = 2

// senderSlots counts what each sender holds open (streams, uploads),
// at most max each. A sender's entry is dropped when its last slot is
// released, so the map holds at most one key per slot in use: it is
// bounded by the requests the HTTP server holds, not by how many senders
// ever connected.
type senderSlots struct {
	max  int
	mu   sync.Mutex
	open map[string]int
}

func newSenderSlots(max int) *senderSlots { return &senderSlots{max: max, open: map[string]int{}} }

// take claims one of sender's slots, and says whether one was free.
func (s *senderSlots) take(sender string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[sender] >= s.max {
		return false
	}
	s.open[sender]++
	return true
}

// release frees a slot take claimed.
func (s *senderSlots) release(sender string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[sender] <= 1 {
		delete(s.open, sender)
		return
	}
	s.open[sender]--
}
