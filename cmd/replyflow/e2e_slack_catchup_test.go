package main

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/slack"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/gateway"
	"github.com/replyflow/replyflow/pipeline"
)

// switchedSink is a gateway's Ingress behind a switch: while down it
// refuses, as an unreachable Temporal does, and counts the refusals of
// each message.
type switchedSink struct {
	next    adapters.Sink
	mu      sync.Mutex
	down    bool
	refused map[string]int
}

func (s *switchedSink) Accept(ctx context.Context, in pipeline.Inbound) error {
	s.mu.Lock()
	if s.down {
		s.refused[in.MessageID]++
		s.mu.Unlock()
		return errors.New("temporal unreachable")
	}
	s.mu.Unlock()
	return s.next.Accept(ctx, in)
}

func (s *switchedSink) set(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

func (s *switchedSink) refusals(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused[id]
}

// Temporal unreachable longer than Slack redelivers: every delivery of
// the envelope is refused and Slack sends it no more. Once Temporal takes
// messages again and the bot reconnects, the message, found in the
// channel's history, is answered once.
func TestSlackMessageRefusedLongerThanSlackRedeliversIsAnsweredOnce(t *testing.T) {
	t.Parallel()
	cfg, fake := withSlackFake(t, testConfig(t), slackSocket, slacktest.Options{AckTimeout: 100 * time.Millisecond})
	s := &slackStack{stack: startStack(t, cfg), fake: fake, mode: slackSocket}
	s.waitSlackUp()
	s.startWorker(&testModel{})
	channel := s.newSlackChannel()

	// A second gateway whose Temporal is down; the fake sends the
	// envelopes to the newest connection, its own.
	sink := &switchedSink{next: &gateway.Ingress{Client: temporalServer.Client(), TaskQueue: cfg.TaskQueue}, down: true, refused: map[string]int{}}
	rcv, err := slack.NewReceiver(slack.ReceiverConfig{Bot: slack.Identity{UserID: fake.BotUserID, BotID: fake.BotID}, Sink: sink})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() {
		stopped <- rcv.RunSocket(ctx, slack.SocketConfig{AppToken: fake.AppToken, BotToken: fake.BotToken, APIURL: fake.APIURL()})
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-stopped)
	})
	waitForSlack(t, fake, "the second gateway connected", func() bool { return fake.Connections() == 2 })

	post, envelope := askSlackOnce(t, fake, channel)
	require.Eventually(t, func() bool { return sink.refusals(post.TS) >= 1+fake.MaxRetries },
		time.Minute, 10*time.Millisecond, "every delivery of the envelope refused")
	require.False(t, fake.Acked(envelope), "a refused envelope is not acked")

	sink.set(false)
	fake.DropConnections()
	s.assertAnsweredOnce(channel, post)
}
