package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/cmd/internal/harness"
)

// TestSIGTERMMidConversationAnswersEveryMessageOnce stops the worker and
// then the gateway with SIGTERM (what systemd, Docker and Kubernetes
// send) while turns run and messages arrive, as real processes against
// the fake Telegram: every message is answered, and answered once.
func TestSIGTERMMidConversationAnswersEveryMessageOnce(t *testing.T) {
	dir := t.TempDir()
	bin, err := harness.Build(dir)
	require.NoError(t, err)
	fake := telegramtest.New(fmt.Sprintf("%d:sigterm", uniqueTelegramID()))
	t.Cleanup(fake.Close)
	env := harness.Env(temporalServer.FrontendHostPort(), "sigterm-"+fmt.Sprint(queueSeq.Add(1)), filepath.Join(dir, "store.db"), fake,
		map[string]string{"DEMO_MODEL_DELAY": "2s", "SHUTDOWN_GRACE": "10s", "LOG_LEVEL": "info", "DEBOUNCE": "0s", "QUEUE_MODE": "followup"})
	worker := harness.Worker(bin, env, filepath.Join(dir, "worker1.log"))
	require.NoError(t, worker.Start())
	// A closure: the test starts a second worker and gateway in these
	// variables, which the cleanup must kill too (a method value would
	// keep the first and leave the others running after the test).
	t.Cleanup(func() { worker.Kill() })
	gw, err := harness.Gateway(bin, env, filepath.Join(dir, "gateway1.log"))
	require.NoError(t, err)
	require.NoError(t, gw.Start())
	t.Cleanup(func() { gw.Kill() })

	user := telegramtest.User{ID: 77, FirstName: "Sam"}
	chats := make([]telegramtest.Chat, 6)
	for i := range chats {
		chats[i] = telegramtest.Private(uniqueTelegramID())
	}
	asked := map[int64]int{}
	send := func(round int) {
		for _, chat := range chats {
			fake.AddMessage(telegramtest.Incoming{Chat: chat, From: user, Text: fmt.Sprintf("round %d", round)})
			asked[chat.ID]++
		}
	}
	// Typing is shown as a model attempt starts, and the model takes 2 s.
	thinking := func() bool { return len(fake.Calls("sendChatAction")) > 0 }

	// The worker is told to stop while its turns run: they finish first.
	send(1)
	require.Eventually(t, thinking, 60*time.Second, 50*time.Millisecond, "turns start")
	worker.Stop()
	assert.Contains(t, worker.Tail(), "every activity it ran has finished", "the running turns finished before the worker left")
	worker = harness.Worker(bin, env, filepath.Join(dir, "worker2.log"))
	require.NoError(t, worker.Start())

	// The gateway is told to stop while messages arrive: what it did not
	// hand to Temporal, Telegram gives the next one.
	send(2)
	gw.Stop()
	send(3)
	gw, err = harness.Gateway(bin, env, filepath.Join(dir, "gateway2.log"))
	require.NoError(t, err)
	require.NoError(t, gw.Start())

	answered := func(chat telegramtest.Chat) []string {
		var texts []string
		for _, m := range fake.Sent(chat.ID) {
			if strings.HasPrefix(m.Text, "You said: ") {
				texts = append(texts, strings.SplitN(m.Text, "\n", 2)[0])
			}
		}
		return texts
	}
	for _, chat := range chats {
		require.Eventually(t, func() bool { return len(answered(chat)) >= asked[chat.ID] }, 90*time.Second, 100*time.Millisecond,
			"chat %d gets its %d answers; has %v", chat.ID, asked[chat.ID], answered(chat))
	}
	for _, chat := range chats {
		texts := answered(chat)
		assert.Len(t, texts, asked[chat.ID], "chat %d: each message answered once: %v", chat.ID, texts)
		for round := 1; round <= 3; round++ {
			assert.Contains(t, strings.Join(texts, "|"), fmt.Sprintf("round %d", round), "chat %d: round %d answered", chat.ID, round)
		}
	}
}
