package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/slack"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/gateway"
	"github.com/replyflow/replyflow/pipeline"
)

// A gateway killed while it holds a Socket Mode envelope it has not acked,
// before or after Temporal accepted its message: the fake Slack sends the
// envelope again to the next connection, as Slack does, and the message
// is answered exactly once.

// withTimedRedelivery points cfg at a fake Slack in Socket Mode that
// sends an unacked envelope again after 3 s, as Slack does. The
// redelivery is what shows that a doomed gateway sent no ack: a kill
// races an ack already handed to slack-go, which writes acks from a
// goroutine of its own. 3 s, not less: the fresh gateway's hand-off must
// not race a further redelivery, or the counts would depend on the load.
func withTimedRedelivery(t *testing.T) (Config, *slacktest.Server) {
	return withSlackFake(t, testConfig(t), slackSocket, slacktest.Options{AckTimeout: 3 * time.Second})
}

// stuckSink is a gateway stuck in the hand-off of a message until it is
// killed: after the signal (next set: Temporal accepted it) or before it
// (next nil). A killed gateway does nothing more.
type stuckSink struct {
	next               adapters.Sink
	received, accepted atomic.Int32
}

func (d *stuckSink) Accept(ctx context.Context, in pipeline.Inbound) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	d.received.Add(1)
	if d.next != nil {
		if err := d.next.Accept(ctx, in); err != nil {
			return err
		}
		d.accepted.Add(1)
	}
	<-ctx.Done()
	return ctx.Err()
}

// runDoomedSlackGateway runs the Slack adapter's Socket Mode receiver, as
// the gateway builds it, with sink, until the fake sent the envelope
// again for want of an ack; then it kills it, and returns once the fake
// saw its connection closed.
func runDoomedSlackGateway(t *testing.T, fake *slacktest.Server, envelope string, sink *stuckSink) {
	ctx, kill := context.WithTimeout(context.Background(), time.Minute)
	defer kill()
	rcv, err := slack.NewReceiver(slack.ReceiverConfig{Bot: slack.Identity{UserID: fake.BotUserID, BotID: fake.BotID}, Sink: sink})
	require.NoError(t, err)
	stopped := make(chan error, 1)
	go func() {
		stopped <- rcv.RunSocket(ctx, slack.SocketConfig{AppToken: fake.AppToken, BotToken: fake.BotToken, APIURL: fake.APIURL()})
	}()
	waitForSlack(t, fake, "the envelope sent again (or an ack)", func() bool {
		envs := fake.Envelopes()
		return fake.Acked(envelope) || (len(envs) == 1 && envs[0].EnvelopeID == envelope && envs[0].RetryAttempt >= 1)
	})
	require.False(t, fake.Acked(envelope), "the doomed gateway acked before its hand-off was done")
	kill()
	select {
	case err := <-stopped:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the doomed gateway did not stop")
	}
	// The fake reads a socket's acks until it sees it closed.
	waitForSlack(t, fake, "the doomed connection closed", func() bool { return fake.Connections() == 0 })
	require.Equal(t, int32(1), sink.received.Load(), "the doomed gateway received the envelope")
	require.False(t, fake.Acked(envelope), "and never acked it")
}

// askSlackOnce posts a mention in channel and sends only its app_mention
// event: one envelope, so that the counts below are the redelivery's alone
// (the twins' dedupe is tested elsewhere).
func askSlackOnce(t *testing.T, fake *slacktest.Server, channel string) (slacktest.Message, string) {
	post, events := fake.AddMessage(slacktest.Post{Channel: channel, User: slackAlice, Text: "<@" + fake.BotUserID + "> are you there?"})
	require.Len(t, events, 2)
	require.Equal(t, "app_mention", events[1]["type"])
	return post, fake.SendEvent(events[1])
}

// startFresh starts the stack's gateway and a worker, and waits until the
// envelope, sent again, was acked by the gateway: the only ack. Until
// then s has its fake and no gateway: the doomed one ran alone.
func (s *slackStack) startFresh(t *testing.T, cfg Config, envelope string) {
	s.stack = startStack(t, cfg)
	s.startWorker(&testModel{})
	s.waitAcks(envelope, 1)
	require.Len(t, s.fake.Envelopes(), 1)
	assert.GreaterOrEqual(t, s.fake.Envelopes()[0].RetryAttempt, 2, "the fresh gateway got a redelivery after the doomed one's")
	assert.Len(t, s.fake.Acks(), 1, "acked once, by the fresh gateway")
}

// assertAnsweredOnce waits for the post's turn to end and checks that it
// was answered once, in its thread.
func (s *slackStack) assertAnsweredOnce(channel string, post slacktest.Message) {
	s.t.Helper()
	s.waitCleared(channel, post.TS)
	replies := s.botReplies(channel, post.TS)
	require.Len(s.t, replies, 1, "answered exactly once, in the thread")
	assert.Equal(s.t, "You said: are you there?", firstLine(replies[0].Text))
	assert.Len(s.t, s.fake.Sent(channel), 1)
}

func TestSlackGatewayKilledBeforeTheSignalLosesNothing(t *testing.T) {
	t.Parallel()
	cfg, fake := withTimedRedelivery(t)
	s := &slackStack{fake: fake, mode: slackSocket}
	channel := s.newSlackChannel()
	post, envelope := askSlackOnce(t, fake, channel)

	runDoomedSlackGateway(t, fake, envelope, &stuckSink{})
	_, err := temporalServer.Client().DescribeWorkflowExecution(context.Background(), s.key(channel).WorkflowID(), "")
	var notFound *serviceerror.NotFound
	require.ErrorAs(t, err, &notFound, "no signal reached Temporal")

	s.startFresh(t, cfg, envelope)
	s.assertAnsweredOnce(channel, post)
	snap := s.stateOf(s.key(channel))
	assert.Equal(t, 1, snap.TurnSeq)
	assert.Equal(t, 1, snap.Counters.Inbound)
	assert.Zero(t, snap.Counters.Duplicates)
}

func TestSlackGatewayKilledAfterTheSignalBeforeTheAckAnswersOnce(t *testing.T) {
	t.Parallel()
	cfg, fake := withTimedRedelivery(t)
	s := &slackStack{fake: fake, mode: slackSocket}
	channel := s.newSlackChannel()
	post, envelope := askSlackOnce(t, fake, channel)

	doomed := &stuckSink{next: &gateway.Ingress{Client: temporalServer.Client(), TaskQueue: cfg.TaskQueue}}
	runDoomedSlackGateway(t, fake, envelope, doomed)
	require.Equal(t, int32(1), doomed.accepted.Load(), "Temporal accepted the message from the doomed gateway")

	s.startFresh(t, cfg, envelope)
	key := s.key(channel)
	// Acked means signalled again; once the session counted the signal,
	// the answers can be counted.
	require.Eventually(t, func() bool {
		c := s.stateOf(key).Counters
		return c.Inbound+c.Duplicates >= 2
	}, 30*time.Second, 50*time.Millisecond, "the session counts the redelivery")
	// The fresh gateway's catch-up may read the message from the running
	// session's channel too: a second copy, dropped the same way.
	assert.GreaterOrEqual(t, s.stateOf(key).Counters.Duplicates, 1, "the redelivery was dropped by the session's dedupe")
	s.assertAnsweredOnce(channel, post)
	snap := s.stateOf(key)
	assert.Equal(t, 1, snap.TurnSeq)
	assert.Equal(t, 1, snap.Counters.Inbound)
}
