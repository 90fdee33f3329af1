package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/gateway"
	"github.com/replyflow/replyflow/pipeline"
)

// TestOpenSessionsFindsDiscordSessionsWhetherAWorkerRanThemOrNot checks
// the visibility query the Discord catch-up lists sessions with against
// the dev server: a session a worker ran carries its last inbound time, a
// session no worker ran yet (only SignalWithStart, no search attributes)
// is found by its workflow ID, and other channels' sessions are not.
func TestOpenSessionsFindsDiscordSessionsWhetherAWorkerRanThemOrNot(t *testing.T) {
	cfg := testConfig(t)
	s := startStack(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bot := fmt.Sprintf("9%017d", queueSeq.Add(1))
	message := func(channel, chat string) pipeline.Inbound {
		// A group message that addresses no one: the session takes it
		// and starts no turn.
		return pipeline.Inbound{Channel: channel, Account: bot, ChatID: chat, ChatType: pipeline.ChatGroup, MessageID: "1",
			SenderID: "5", Text: "hello all", ReceivedAt: time.Now()}
	}
	ran, waiting, slack := message("discord", "100"), message("discord", "101"), message("slack", "C1")
	nobody := &gateway.Ingress{Client: s.client, TaskQueue: cfg.TaskQueue + "-nobody-polls"}
	require.NoError(t, nobody.Accept(ctx, waiting))
	s.startWorker(&testModel{})
	ingress := &gateway.Ingress{Client: s.client, TaskQueue: cfg.TaskQueue}
	require.NoError(t, ingress.Accept(ctx, ran))
	require.NoError(t, ingress.Accept(ctx, slack))
	t.Cleanup(func() {
		for _, in := range []pipeline.Inbound{ran, waiting, slack} {
			_ = s.client.TerminateWorkflow(context.Background(), in.Session().WorkflowID(), "", "test over")
		}
	})

	lister := &gateway.Sessions{Client: s.client}
	var mine map[string]adapters.OpenSession
	deadline := time.Now().Add(30 * time.Second)
	for {
		open, err := lister.OpenSessions(ctx, "discord")
		require.NoError(t, err)
		mine = map[string]adapters.OpenSession{}
		for _, o := range open {
			if o.Key.Account == bot {
				mine[o.Key.Chat] = o
			}
		}
		// Visibility catches up with the worker's upsert a moment later.
		if len(mine) == 2 && !mine["100"].LastInboundAt.IsZero() {
			break
		}
		require.False(t, time.Now().After(deadline), "the listing never showed both sessions with the last inbound time: %+v", mine)
		time.Sleep(100 * time.Millisecond)
	}
	assert.Equal(t, ran.Session(), mine["100"].Key)
	assert.WithinDuration(t, time.Now(), mine["100"].LastInboundAt, time.Minute)
	assert.Equal(t, waiting.Session(), mine["101"].Key)
	assert.True(t, mine["101"].LastInboundAt.IsZero(), "no worker ran it")
	assert.WithinDuration(t, time.Now(), mine["101"].StartedAt, time.Minute)
}
