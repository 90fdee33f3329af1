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

// streamSlots counts the open event streams per sender. A sender's entry
// is dropped when its last stream closes, so the map holds at most one
// key per open stream: it is bounded by the connections the HTTP server
// holds, not by how many senders ever connected.
type streamSlots struct {
	mu   sync.Mutex
	open map[string]int
}

func newStreamSlots() *streamSlots { return &streamSlots{open: map[string]int{}} }

// take claims one of sender's slots, and says whether one was free.
func (s *streamSlots) take(sender string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[sender] >= MaxStreamsPerSender {
		return false
	}
	s.open[sender]++
	return true
}

// release frees a slot take claimed.
func (s *streamSlots) release(sender string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[sender] <= 1 {
		delete(s.open, sender)
		return
	}
	s.open[sender]--
}
