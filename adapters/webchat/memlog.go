package webchat

import (
	"context"
	"sync"

	"github.com/replyflow/replyflow/adapters"
)

// Bounds of the memory log, the web chat's log when the gateway has no
// store: as the store's per chat (store.ChatLogMessages, ChatLogBytes),
// and memoryLogChats chats, the least recently written dropped first.
const (
	memoryLogMessages = 200
	memoryLogBytes    = 2 << 20
	memoryLogChats    = 100
)

// memoryLog is an adapters.ChatLog in this process's memory: the history
// a page replays lasts as long as the process. The gateway gives the web
// chat the store's log; this one serves a Server built without one (tests,
// programs that embed the web chat).
type memoryLog struct {
	mu    sync.Mutex
	seq   uint64
	chats map[string]*memoryChat
}

type memoryChat struct {
	msgs    []adapters.ChatLogMessage
	written uint64
}

func newMemoryLog() *memoryLog { return &memoryLog{chats: map[string]*memoryChat{}} }

func (l *memoryLog) chat(id string) *memoryChat {
	c := l.chats[id]
	if c == nil {
		if len(l.chats) >= memoryLogChats {
			var oldest string
			for id, c := range l.chats {
				if oldest == "" || c.written < l.chats[oldest].written {
					oldest = id
				}
			}
			delete(l.chats, oldest)
		}
		c = &memoryChat{}
		l.chats[id] = c
	}
	l.seq++
	c.written = l.seq
	return c
}

func (l *memoryLog) find(chat, id string) *adapters.ChatLogMessage {
	if c := l.chats[chat]; c != nil {
		for i := range c.msgs {
			if c.msgs[i].ID == id {
				return &c.msgs[i]
			}
		}
	}
	return nil
}

func (l *memoryLog) AddChatMessage(_ context.Context, m adapters.ChatLogMessage) (string, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.chat(m.Chat)
	for _, have := range c.msgs {
		if have.Key == m.Key || have.ID == m.ID {
			return have.ID, false, nil
		}
	}
	m.Data = append([]byte(nil), m.Data...)
	c.msgs = append(c.msgs, m)
	c.trim()
	return m.ID, true, nil
}

// trim drops the chat's oldest messages beyond its bounds, never the
// newest.
func (c *memoryChat) trim() {
	total := 0
	for _, m := range c.msgs {
		total += len(m.Data)
	}
	drop := 0
	for len(c.msgs)-drop > 1 && (len(c.msgs)-drop > memoryLogMessages || total > memoryLogBytes) {
		total -= len(c.msgs[drop].Data)
		drop++
	}
	if drop > 0 {
		c.msgs = append([]adapters.ChatLogMessage(nil), c.msgs[drop:]...)
	}
}

func (l *memoryLog) EditChatMessage(_ context.Context, chat, id string, data []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := l.find(chat, id); m != nil {
		m.Data = append([]byte(nil), data...)
		l.chats[chat].trim()
	}
	return nil
}

func (l *memoryLog) SetChatReaction(_ context.Context, chat, id, emoji string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := l.find(chat, id); m != nil {
		m.Reaction = emoji
	}
	return nil
}

func (l *memoryLog) ChatMessages(_ context.Context, chat string) ([]adapters.ChatLogMessage, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.chats[chat]
	if c == nil {
		return nil, nil
	}
	out := make([]adapters.ChatLogMessage, len(c.msgs))
	for i, m := range c.msgs {
		m.Key = ""
		out[i] = m
	}
	return out, nil
}

func (l *memoryLog) ChatMessage(_ context.Context, chat, id string) (adapters.ChatLogMessage, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.find(chat, id)
	if m == nil {
		return adapters.ChatLogMessage{}, false, nil
	}
	out := *m
	out.Key, out.Data = "", append([]byte(nil), m.Data...)
	return out, true, nil
}
