package slack

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/pipeline"
)

// serveEvents mounts the handlers as the gateway does; now is their clock.
func serveEvents(t *testing.T, fake *slacktest.Server, to *recordingSink, now func() time.Time) (events, interactivity string) {
	t.Helper()
	r := newTestReceiverFor(t, fake, to)
	mux := http.NewServeMux()
	mux.Handle(EventsPath, r.EventsHandler(fake.SigningSecret, now))
	mux.Handle(InteractivityPath, r.InteractivityHandler(fake.SigningSecret, now))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + EventsPath, srv.URL + InteractivityPath
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func TestEventsAcceptedThen200AndRedeliveredAfter503(t *testing.T) {
	fake, to := startFake(t), newSink()
	events, _ := serveEvents(t, fake, to, nil)
	ctx := testContext(t)
	m, evs := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "<@" + fake.BotUserID + "> hi"})

	to.setFailNext(1)
	status, body := do(t, fake.EventRequest(ctx, events, evs[0], slacktest.Redelivery{}))
	assert.Equal(t, http.StatusServiceUnavailable, status, "the sink refused: Slack must deliver again")
	assert.Contains(t, body, "deliver it again")
	_, accepted, _ := to.snapshot()
	assert.Empty(t, accepted)

	status, _ = do(t, fake.EventRequest(ctx, events, evs[0], slacktest.Redelivery{Num: 1, Reason: "http_error"}))
	require.Equal(t, http.StatusOK, status)
	calls, accepted, _ := to.snapshot()
	assert.Equal(t, 2, calls)
	require.Len(t, accepted, 1)
	in := accepted[0]
	assert.Equal(t, pipeline.SessionKey{Channel: Channel, Account: fake.TeamID, Chat: "C1"}, in.Session())
	assert.Equal(t, m.TS, in.MessageID)
	assert.Equal(t, "hi", in.Text)
	assert.True(t, in.MentionsBot)
	assert.Equal(t, m.TS, in.ThreadID, "in a channel the reply goes in the message's thread")
}

func TestEventsReactionBecomesFeedback(t *testing.T) {
	fake, to := startFake(t), newSink()
	events, _ := serveEvents(t, fake, to, nil)
	status, _ := do(t, fake.EventRequest(testContext(t), events, slacktest.ReactionAdded("U1", "thumbsup", "C1", "1.000001"), slacktest.Redelivery{}))
	require.Equal(t, http.StatusOK, status)
	_, _, feedback := to.snapshot()
	require.Len(t, feedback, 1)
	assert.Equal(t, []string{":thumbsup:"}, feedback[0].Emoji)
	assert.Equal(t, "1.000001", feedback[0].MessageID)
}

func TestEventsRefusesBadSignaturesStaleRequestsAndBigBodies(t *testing.T) {
	fake, to := startFake(t), newSink()
	ctx := testContext(t)
	_, evs := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "hi"})

	late := func() time.Time { return time.Now().Add(10 * time.Minute) }
	staleURL, _ := serveEvents(t, fake, to, late)
	status, body := do(t, fake.EventRequest(ctx, staleURL, evs[0], slacktest.Redelivery{}))
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Contains(t, body, ErrStaleTimestamp.Error())

	events, _ := serveEvents(t, fake, to, nil)
	req := fake.EventRequest(ctx, events, evs[0], slacktest.Redelivery{})
	req.Header.Set(HeaderSignature, slacktest.Sign("another-secret", req.Header.Get(HeaderTimestamp), fake.EventCallback(evs[0])))
	status, body = do(t, req)
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Contains(t, body, ErrBadSignature.Error())

	big := append([]byte(`{"type":"event_callback","pad":"`), bytes.Repeat([]byte("x"), MaxRequestBody)...)
	big = append(big, `"}`...)
	status, _ = do(t, fake.SignedRequest(ctx, events, "application/json", big, slacktest.Redelivery{}))
	assert.Equal(t, http.StatusRequestEntityTooLarge, status)

	calls, _, _ := to.snapshot()
	assert.Zero(t, calls, "nothing refused reaches the sink")
}

// A request whose signature headers fail is refused on them, before its
// body is read: a stranger's big body is not read to learn it is
// unsigned (a read body past the bound would be 413).
func TestUnsignedRequestsAreRefusedBeforeTheirBodyIsRead(t *testing.T) {
	fake, to := startFake(t), newSink()
	ctx := testContext(t)
	events, interactivity := serveEvents(t, fake, to, nil)
	big := bytes.Repeat([]byte("x"), 2*MaxRequestBody)
	stale := strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)
	for _, c := range []struct {
		name, target string
		header       map[string]string
		want         error
	}{
		{"no headers", events, nil, ErrMissingSignature},
		{"no timestamp", interactivity, map[string]string{HeaderSignature: "v0=00"}, ErrMissingTimestamp},
		{"stale", events, map[string]string{HeaderSignature: "v0=00", HeaderTimestamp: stale}, ErrStaleTimestamp},
		{"not hex", events, map[string]string{HeaderSignature: "v1=zz", HeaderTimestamp: strconv.FormatInt(time.Now().Unix(), 10)}, ErrBadSignature},
	} {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.target, bytes.NewReader(big))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		status, body := do(t, req)
		assert.Equal(t, http.StatusUnauthorized, status, c.name)
		assert.Contains(t, body, c.want.Error(), c.name)
	}
	calls, _, _ := to.snapshot()
	assert.Zero(t, calls)
}

// A signed request of a media type Slack never sends to that URL is none
// of its deliveries: 415 with the type it takes, and nothing reaches the
// sink. Unsigned, it is refused for the signature first.
func TestSignedRequestsOfAnotherContentTypeAre415(t *testing.T) {
	fake, to := startFake(t), newSink()
	events, interactivity := serveEvents(t, fake, to, nil)
	ctx := testContext(t)
	_, evs := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "<@" + fake.BotUserID + "> hi"})
	press := fake.BlockActions(slacktest.BlockAction{Channel: "C1", User: "U1", MessageTS: "1.000001", Value: "approve:p1"})
	form := []byte(url.Values{"payload": {string(press)}}.Encode())
	for _, c := range []struct {
		target, contentType string
		body                []byte
		want                string
	}{
		{events, "text/plain", fake.EventCallback(evs[0]), "application/json"},
		{events, "application/x-www-form-urlencoded", form, "application/json"},
		{events, "", fake.EventCallback(evs[0]), "application/json"},
		{interactivity, "application/json", press, "application/x-www-form-urlencoded"},
		{interactivity, "text/plain", form, "application/x-www-form-urlencoded"},
	} {
		status, body := do(t, fake.SignedRequest(ctx, c.target, c.contentType, c.body, slacktest.Redelivery{}))
		assert.Equal(t, http.StatusUnsupportedMediaType, status, "%s as %q: %s", c.target, c.contentType, body)
		assert.Contains(t, body, c.want)
	}
	unsigned, err := http.NewRequestWithContext(ctx, http.MethodPost, events, bytes.NewReader(fake.EventCallback(evs[0])))
	require.NoError(t, err)
	unsigned.Header.Set("Content-Type", "text/plain")
	status, _ := do(t, unsigned)
	assert.Equal(t, http.StatusUnauthorized, status, "the signature is checked before the content type")
	calls, _, _ := to.snapshot()
	assert.Zero(t, calls)
	// Slack's own content types, with a charset, still go through.
	status, body := do(t, fake.SignedRequest(ctx, events, "application/json; charset=utf-8", fake.EventCallback(evs[0]), slacktest.Redelivery{}))
	assert.Equal(t, http.StatusOK, status, body)
}

func TestEventsURLVerificationAndBodiesThatAreNoEvents(t *testing.T) {
	fake, to := startFake(t), newSink()
	events, _ := serveEvents(t, fake, to, nil)
	ctx := testContext(t)

	status, body := do(t, fake.URLVerificationRequest(ctx, events, "challenge-42"))
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "challenge-42", body)

	for _, notAnEvent := range []string{`not json`, `{"no":"type"}`, `[1,2]`} {
		status, body = do(t, fake.SignedRequest(ctx, events, "application/json", []byte(notAnEvent), slacktest.Redelivery{}))
		assert.Equal(t, http.StatusBadRequest, status, notAnEvent)
		assert.Contains(t, body, "not a Slack Events API payload", notAnEvent)
	}

	// Signed, well-formed, but slack-go cannot read its inner event: acked,
	// or Slack would retry it forever.
	unreadable := `{"type":"event_callback","team_id":"T0TEST","event":"not an object"}`
	status, _ = do(t, fake.SignedRequest(ctx, events, "application/json", []byte(unreadable), slacktest.Redelivery{}))
	assert.Equal(t, http.StatusOK, status)

	get, err := http.NewRequestWithContext(ctx, http.MethodGet, events, nil)
	require.NoError(t, err)
	status, _ = do(t, get)
	assert.Equal(t, http.StatusMethodNotAllowed, status)

	calls, _, _ := to.snapshot()
	assert.Zero(t, calls)
}

func TestInteractivityButtonPressInItsSessionAndThread(t *testing.T) {
	fake, to := startFake(t), newSink()
	_, interactivity := serveEvents(t, fake, to, nil)
	ctx := testContext(t)
	press := fake.BlockActions(slacktest.BlockAction{Channel: "C1", User: "U7", MessageTS: "1700000000.000200",
		ThreadTS: "1700000000.000100", ActionID: "approve", BlockID: "proposal", Value: "approve:p1"})

	to.setFailNext(1)
	status, _ := do(t, fake.InteractionRequest(ctx, interactivity, press, slacktest.Redelivery{}))
	assert.Equal(t, http.StatusServiceUnavailable, status)

	status, _ = do(t, fake.InteractionRequest(ctx, interactivity, press, slacktest.Redelivery{}))
	require.Equal(t, http.StatusOK, status)
	_, accepted, _ := to.snapshot()
	require.Len(t, accepted, 1)
	in := accepted[0]
	decision, id, ok := pipeline.ParseAction(in.Action)
	assert.True(t, ok)
	assert.Equal(t, "approve", decision)
	assert.Equal(t, "p1", id)
	assert.Equal(t, pipeline.SessionKey{Channel: Channel, Account: fake.TeamID, Chat: "C1"}, in.Session())
	assert.Equal(t, "U7", in.SenderID)
	assert.Equal(t, "1700000000.000200", in.ReplyTo, "the message that carried the button")
	assert.Equal(t, "1700000000.000100", in.ThreadID, "the thread the button's message is in")
	assert.True(t, in.ReplyToBot)

	status, body := do(t, fake.SignedRequest(ctx, interactivity, "application/x-www-form-urlencoded", []byte("payload=%7Bnope"), slacktest.Redelivery{}))
	assert.Equal(t, http.StatusBadRequest, status)
	assert.True(t, strings.HasPrefix(body, "not a Slack interactivity payload"), body)
}

func TestNormalizeInteractionSkipsWhatIsNoButtonPress(t *testing.T) {
	fake := startFake(t)
	var cb = decodeInteraction(t, fake.BlockActions(slacktest.BlockAction{Channel: "D1", User: "U7", MessageTS: "1.000002", Value: "reject:p2"}))
	ev := NormalizeInteraction(ReplyThreaded, cb, time.Now())
	require.NotNil(t, ev.Inbound, ev.Skip)
	assert.Equal(t, pipeline.ChatDirect, ev.Inbound.ChatType)
	assert.Empty(t, ev.Inbound.ThreadID, "a top-level DM is answered top-level")

	cb.ActionCallback.BlockActions[0].Value = ""
	assert.NotEmpty(t, NormalizeInteraction(ReplyThreaded, cb, time.Now()).Skip)
	cb.Type = "view_submission"
	assert.Contains(t, NormalizeInteraction(ReplyThreaded, cb, time.Now()).Skip, "view_submission")
}
