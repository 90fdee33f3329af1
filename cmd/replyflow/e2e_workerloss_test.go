package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/cmd/internal/harness"
	"github.com/replyflow/replyflow/pipeline"
)

// A turn whose worker is killed (SIGKILL, real processes) three times
// while the model thinks, one more time than the turn has rounds
// (REPLYFLOW_TURN_ATTEMPTS, 3): each lost worker only means asking the
// same model again on the next one, and the user gets the answer, not
// "no model could answer". (Before, each loss counted as the model's
// Timeout, and the short chaos run lost a message now and then when its
// kills fell three times on one turn.)
func TestATurnOutlivesThreeKilledWorkersInARow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin, err := harness.Build(dir)
	require.NoError(t, err)
	oa := modeltest.NewOpenAI()
	t.Cleanup(oa.Close)
	const answer = "The answer, after three workers died under it."
	for range 3 {
		oa.Push(modeltest.Step{Text: "never seen", Latency: time.Minute})
	}
	oa.Push(modeltest.Step{Text: answer})

	n := queueSeq.Add(1)
	fake := telegramtest.New(fmt.Sprintf("%d:workerloss", 5600+n))
	t.Cleanup(fake.Close)
	chat := telegramtest.Private(6600 + n)
	vars := map[string]string{
		"MODEL": "openai/gpt-test", "STREAM": "off", "TURN_HEARTBEAT_TIMEOUT": "2s",
		"DEBOUNCE": "0s", "LOG_LEVEL": "info", "REACTION_CLEAR_DELAY": "1s",
	}
	env := harness.Env(temporalServer.FrontendHostPort(), fmt.Sprintf("workerloss-%d", n), filepath.Join(dir, "store.db"), fake, vars)
	env = append(env, "OPENAI_BASE_URL="+oa.URL+"/v1", "OPENAI_API_KEY=test")
	startWorker := realProcesses(t, bin, dir, env)
	asked := func(requests int) func() bool {
		return func() bool { return len(oa.Requests()) >= requests }
	}

	worker := startWorker(1)
	fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "a hard question"})
	for i := 1; i <= 3; i++ {
		// Each worker dies while the model is writing for it.
		require.Eventually(t, asked(i), time.Minute, 10*time.Millisecond, "the model was asked by worker %d", i)
		worker.Kill()
		worker = startWorker(i + 1)
	}
	waitOnFake(t, fake.WaitFor, "the answer", func() bool {
		got := botMessages(fake, chat)
		return len(got) > 0 && got[len(got)-1].Text == answer
	})

	got := botMessages(fake, chat)
	require.Len(t, got, 1, "one message: the answer, and no failure notice before it")
	assert.Len(t, oa.Requests(), 4, "the same model, asked once by each worker")

	c, err := harness.Dial(context.Background(), temporalServer.FrontendHostPort(), "")
	require.NoError(t, err)
	defer c.Close()
	recordHistoryOf(t, c, pipeline.SessionKey{Channel: "telegram", Account: strconv.FormatInt(fake.Bot.ID, 10), Chat: strconv.FormatInt(chat.ID, 10)}, "worker_lost_thrice")
}
