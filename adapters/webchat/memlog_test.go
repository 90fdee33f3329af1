package webchat

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
)

func TestTheMemoryLogKeepsItsBounds(t *testing.T) {
	ctx := context.Background()
	l := newMemoryLog()
	add := func(chat, id string, data string) {
		_, _, err := l.AddChatMessage(ctx, adapters.ChatLogMessage{Chat: chat, ID: id, Key: id, Kind: "message", Data: []byte(data)})
		require.NoError(t, err)
	}
	for i := range memoryLogMessages + 3 {
		add("many", fmt.Sprintf("m%d", i), "{}")
	}
	got, _ := l.ChatMessages(ctx, "many")
	require.Len(t, got, memoryLogMessages)
	assert.Equal(t, "m3", got[0].ID)

	big := strings.Repeat("x", memoryLogBytes/2)
	for i := range 3 {
		add("big", fmt.Sprintf("b%d", i), big)
	}
	got, _ = l.ChatMessages(ctx, "big")
	assert.Len(t, got, 2, "within the bytes")

	for i := range memoryLogChats + 1 {
		add(fmt.Sprintf("chat%d", i), "x", "{}")
	}
	assert.Len(t, l.chats, memoryLogChats)
	got, _ = l.ChatMessages(ctx, "many")
	assert.Empty(t, got, "the least recently written chat went first")
}

func TestTheMemoryLogFindsAMessageByID(t *testing.T) {
	ctx := context.Background()
	l := newMemoryLog()
	_, _, err := l.AddChatMessage(ctx, adapters.ChatLogMessage{Chat: "c", ID: "u1", Key: "user:u1", Kind: "user", Data: []byte(`{"sender_id":"alice"}`)})
	require.NoError(t, err)
	m, ok, err := l.ChatMessage(ctx, "c", "u1")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, adapters.ChatLogMessage{Chat: "c", ID: "u1", Kind: "user", Data: []byte(`{"sender_id":"alice"}`)}, m)
	_, ok, err = l.ChatMessage(ctx, "other", "u1")
	require.NoError(t, err)
	assert.False(t, ok)
}
