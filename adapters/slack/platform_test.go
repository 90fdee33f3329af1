package slack

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/pipeline"
)

func TestPlatformValidate(t *testing.T) {
	assert.Empty(t, (&Platform{}).Validate(), "a disabled platform is not checked")
	good := Platform{BotToken: "xoxb-1", Mode: "socket", AppToken: "xapp-1", ReplyInThread: "threaded", StaleAfter: time.Minute,
		EventsPath: "/slack/events", InteractivityPath: "/slack/interactivity",
		CatchupLimit: 100, CatchupMaxAge: 24 * time.Hour, CatchupConversations: 200}
	assert.Empty(t, good.Validate())
	events := good
	events.Mode, events.AppToken, events.SigningSecret = "events", "", "s"
	assert.Empty(t, events.Validate())

	bad := good
	bad.BotToken, bad.AppToken, bad.ReplyInThread = "xoxp-1", "xoxb-1", "sometimes"
	errs := bad.Validate()
	require.Len(t, errs, 3)
	assert.ErrorContains(t, errs[0], "REPLYFLOW_SLACK_BOT_TOKEN")
	assert.ErrorContains(t, errs[1], "REPLYFLOW_SLACK_APP_TOKEN")
	assert.ErrorContains(t, errs[2], "REPLYFLOW_SLACK_REPLY_IN_THREAD")

	bad = events
	bad.SigningSecret, bad.InteractivityPath = "", "/slack/events"
	assert.Len(t, bad.Validate(), 2)
	bad.Mode = "rtm"
	assert.ErrorContains(t, bad.Validate()[0], "REPLYFLOW_SLACK_MODE")

	reactions := good
	reactions.Reactions = map[string]string{"done": "tada", "error": ":x:", "finished": "ok"}
	errs = reactions.Validate()
	require.Len(t, errs, 2)
	assert.ErrorContains(t, errs[0], `REPLYFLOW_SLACK_REACTIONS: error`, "done:tada is good; errors in key order")
	assert.ErrorContains(t, errs[0], "without colons")
	assert.ErrorContains(t, errs[1], `unknown reaction state "finished"`)
}

func TestPlatformReactionsOverrideTheShortcodes(t *testing.T) {
	fake := startFake(t)
	p := fakePlatform(fake, "socket")
	p.Reactions = map[string]string{"done": "tada"}
	out, err := p.Outbound(adapters.WorkerSide{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	post, _ := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "hi"})
	session := pipeline.SessionKey{Channel: Channel, Account: fake.TeamID, Chat: "C1"}
	for _, state := range []pipeline.ReactionState{pipeline.ReactionReceived, pipeline.ReactionDone} {
		require.NoError(t, out.SetReaction(testContext(t), pipeline.ReactionChange{Session: session, MessageID: post.TS, ThreadID: post.TS, State: state}))
	}
	assert.Equal(t, []string{"tada"}, fake.Reactions("C1", post.TS), "done is tada; received kept its eyes, now replaced")
}

// serve starts the platform's gateway side against the fake.
func serve(t *testing.T, p *Platform, to *recordingSink) (string, *healthLog, adapters.Serving) {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	health := &healthLog{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	serving, err := p.Serve(ctx, adapters.GatewaySide{Mux: mux, Sink: to, Feedback: to, Health: health,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	return srv.URL, health, serving
}

func fakePlatform(fake *slacktest.Server, mode string) *Platform {
	return &Platform{BotToken: fake.BotToken, AppToken: fake.AppToken, SigningSecret: fake.SigningSecret, Mode: mode,
		EventsPath: EventsPath, InteractivityPath: InteractivityPath, APIURL: fake.APIURL(), StaleAfter: time.Second,
		CatchupLimit: 100, CatchupMaxAge: 24 * time.Hour, CatchupConversations: 200}
}

func TestPlatformServesTheEventsAPIOnceConnected(t *testing.T) {
	fake, to := startFake(t), newSink()
	base, health, _ := serve(t, fakePlatform(fake, "events"), to)
	ctx := testContext(t)
	waitUntil(t, ctx, "Slack reported up", func() bool { return health.ups() >= 1 })

	m, evs := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "<@" + fake.BotUserID + "> hi"})
	status, _ := do(t, fake.EventRequest(ctx, base+EventsPath, evs[0], slacktest.Redelivery{}))
	require.Equal(t, http.StatusOK, status)
	accepted := to.waitAccepted(t, ctx, 1)
	assert.Equal(t, m.TS, accepted[0].MessageID)
	assert.True(t, accepted[0].MentionsBot, "the bot's ID came from auth.test")

	press := fake.BlockActions(slacktest.BlockAction{Channel: "C1", User: "U7", MessageTS: "1.000009", Value: "approve:p1"})
	status, _ = do(t, fake.InteractionRequest(ctx, base+InteractivityPath, press, slacktest.Redelivery{}))
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "approve:p1", to.waitAccepted(t, ctx, 2)[1].Action)
}

func TestPlatformServesSocketMode(t *testing.T) {
	fake, to := startFake(t), newSink()
	_, health, _ := serve(t, fakePlatform(fake, "socket"), to)
	ctx := testContext(t)
	waitUntil(t, ctx, "Slack reported up", func() bool { return health.ups() >= 1 })
	_, evs := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "hi"})
	id := fake.SendEvent(evs[0])
	to.waitAccepted(t, ctx, 1)
	require.NoError(t, fake.WaitFor(ctx, func() bool { return fake.Acked(id) }))
}

func TestPlatformFailsOnAWrongBotToken(t *testing.T) {
	fake, to := startFake(t), newSink()
	p := fakePlatform(fake, "events")
	p.BotToken = "xoxb-wrong"
	_, _, serving := serve(t, p, to)
	select {
	case err := <-serving.Failed:
		assert.ErrorContains(t, err, "REPLYFLOW_SLACK_BOT_TOKEN")
	case <-testContext(t).Done():
		t.Fatal("a wrong token never failed the platform")
	}
}
