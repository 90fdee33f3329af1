package webchat

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// backlogBytes checks the hub's count of its backlogs' bytes against the
// backlogs themselves, and returns it.
func backlogBytes(t *testing.T, h *hub) int {
	t.Helper()
	total := 0
	for id, c := range h.chats {
		sum := 0
		for _, ev := range c.backlog {
			sum += eventBytes(ev)
		}
		require.Equal(t, sum, c.bytes, "chat %s counts its backlog's bytes", id)
		total += sum
	}
	require.Equal(t, total, h.bytes, "the hub counts every backlog's bytes")
	return total
}

// A chat's backlog is bounded in bytes as well as in events: 200 user
// messages of 32 KiB of "<" (each escaped to six bytes in JSON) would
// otherwise hold 38 MiB for one chat.
func TestHubBacklogIsBoundedInBytesPerChat(t *testing.T) {
	h := newHub("e")
	text := strings.Repeat("<", 32<<10)
	for i := range backlogPerChat {
		h.publish("room", "user", UserEvent{MessageID: "m" + strconv.Itoa(i), SenderID: "s", Text: text})
	}
	c := h.chats["room"]
	assert.LessOrEqual(t, c.bytes, backlogBytesPerChat)
	assert.Greater(t, c.bytes, backlogBytesPerChat/2, "the bound is used, not emptied")
	assert.Equal(t, "e-"+strconv.Itoa(backlogPerChat), c.backlog[len(c.backlog)-1].ID, "the newest event is kept")
	backlogBytes(t, h)

	missed, sub := h.subscribe("room", "e-1", false)
	defer h.unsubscribe("room", sub)
	assert.Equal(t, len(c.backlog), len(missed), "a reconnection gets what the backlog still holds")
}

// All backlogs together are bounded: past maxBacklogBytes the chats
// nobody watches lose theirs first, and a watched chat keeps its own.
func TestHubBacklogsAreBoundedInBytesTogether(t *testing.T) {
	h := newHub("e")
	_, sub := h.subscribe("watched", "", false)
	defer h.unsubscribe("watched", sub)
	file := &FileEvent{Name: "f.bin", ContentType: "application/octet-stream", Data: make([]byte, MaxFileBytes)}
	h.publish("watched", "message", MessageEvent{MessageID: "w", File: file})
	perChat := backlogBytesPerChat / (MaxFileBytes*4/3 + 256) // what one chat keeps of them
	chats := maxBacklogBytes/backlogBytesPerChat + 20
	for i := range chats {
		for j := range perChat {
			h.publish("chat-"+strconv.Itoa(i), "message", MessageEvent{MessageID: strconv.Itoa(j), File: file})
		}
	}
	assert.LessOrEqual(t, backlogBytes(t, h), maxBacklogBytes)
	assert.Greater(t, h.bytes, maxBacklogBytes/2, "the bound is used, not emptied")
	assert.Equal(t, 1, len(h.chats["watched"].backlog), "the watched chat keeps its backlog while idle chats have some")
	last := h.chats["chat-"+strconv.Itoa(chats-1)]
	assert.Equal(t, perChat, len(last.backlog), "the chat written last keeps its own")

	// A chat whose backlog went keeps counting: its IDs only grow.
	first := h.chats["chat-0"]
	require.Equal(t, 0, len(first.backlog))
	h.publish("chat-0", "message", MessageEvent{MessageID: "again"})
	assert.Equal(t, "e-"+strconv.Itoa(perChat+1), first.backlog[0].ID)
	backlogBytes(t, h)
}
