package slacktest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/replyflow/replyflow/adapters/slack/slacktest"
)

// received is what a receiver made of one request, verified as an app
// verifies Slack's with slack-go.
type received struct {
	verifyErr     error
	body          []byte
	form          string
	retry, reason string
}

// receiver is an app's endpoint that verifies and keeps each request.
func receiver(t *testing.T, secret string) (string, func() []received) {
	t.Helper()
	var mu sync.Mutex
	var got []received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec := received{body: body, retry: r.Header.Get("X-Slack-Retry-Num"), reason: r.Header.Get("X-Slack-Retry-Reason")}
		sv, err := slack.NewSecretsVerifier(r.Header, secret)
		if err == nil {
			_, _ = sv.Write(body)
			err = sv.Ensure()
		}
		rec.verifyErr = err
		if r.Header.Get("Content-Type") == "application/x-www-form-urlencoded" {
			r.Body = io.NopCloser(bytes.NewReader(body))
			_ = r.ParseForm()
			rec.form = r.PostForm.Get("payload")
		}
		mu.Lock()
		got = append(got, rec)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []received {
		mu.Lock()
		defer mu.Unlock()
		return append([]received(nil), got...)
	}
}

func send(t *testing.T, req *http.Request) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func TestEventRequestsAreSignedAndParse(t *testing.T) {
	fake, _ := start(t)
	url, got := receiver(t, fake.SigningSecret)
	ctx := context.Background()
	mention, events := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "<@" + fake.BotUserID + "> hi"})
	join, joinEvents := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U2", Subtype: "channel_join", Text: "<@U2> has joined the channel"})
	_, botEvents := fake.AddMessage(slacktest.Post{Channel: "C1", Subtype: "bot_message", BotID: "B9", Text: "from another bot"})
	_, fileEvents := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Subtype: "file_share", Text: "see", Files: []slacktest.File{{ID: "F1", Name: "a.png", Mimetype: "image/png"}}})
	all := append(append(append(events, joinEvents...), botEvents...), fileEvents...)
	all = append(all, slacktest.ReactionAdded("U1", "thumbsup", "C1", mention.TS))
	for _, e := range all {
		send(t, fake.EventRequest(ctx, url, e, slacktest.Redelivery{}))
	}
	send(t, fake.EventRequest(ctx, url, events[0], slacktest.Redelivery{Num: 1, Reason: "http_timeout"}))

	reqs := got()
	if len(reqs) != len(all)+1 {
		t.Fatalf("received %d requests, want %d", len(reqs), len(all)+1)
	}
	var kinds []string
	for i, r := range reqs {
		if r.verifyErr != nil {
			t.Errorf("request %d: slack-go's verifier refused it: %v", i, r.verifyErr)
		}
		outer, err := slackevents.ParseEvent(r.body, slackevents.OptionNoVerifyToken())
		if err != nil || outer.Type != slackevents.CallbackEvent {
			t.Fatalf("request %d: ParseEvent = %+v, %v", i, outer, err)
		}
		switch ev := outer.InnerEvent.Data.(type) {
		case *slackevents.MessageEvent:
			kinds = append(kinds, "message/"+ev.SubType)
			if ev.SubType == "file_share" && (ev.Message == nil || len(ev.Message.Files) != 1 || ev.Message.Files[0].ID != "F1") {
				t.Errorf("file_share event without its file: %+v", ev)
			}
			if ev.SubType == "channel_join" && ev.TimeStamp != join.TS {
				t.Errorf("channel_join ts = %s, want %s", ev.TimeStamp, join.TS)
			}
		case *slackevents.AppMentionEvent:
			kinds = append(kinds, "app_mention")
			if ev.TimeStamp != mention.TS {
				t.Errorf("app_mention ts = %s, want its message's %s", ev.TimeStamp, mention.TS)
			}
		case *slackevents.ReactionAddedEvent:
			kinds = append(kinds, "reaction_added")
		default:
			kinds = append(kinds, outer.InnerEvent.Type)
		}
	}
	want := []string{"message/", "app_mention", "message/channel_join", "message/bot_message", "message/file_share", "reaction_added", "message/"}
	if len(kinds) != len(want) {
		t.Fatalf("kinds = %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Errorf("kinds = %v, want %v", kinds, want)
			break
		}
	}
	if last := reqs[len(reqs)-1]; last.retry != "1" || last.reason != "http_timeout" || reqs[0].retry != "" {
		t.Errorf("retry headers: first %q, redelivery %q/%q; want none, then 1/http_timeout", reqs[0].retry, last.retry, last.reason)
	}
}

func TestURLVerificationAndBlockActions(t *testing.T) {
	fake, _ := start(t)
	url, got := receiver(t, fake.SigningSecret)
	ctx := context.Background()
	send(t, fake.URLVerificationRequest(ctx, url, "challenge-1"))
	payload := fake.BlockActions(slacktest.BlockAction{Channel: "C1", User: "U1", MessageTS: "1.000001", ThreadTS: "1.000000", ActionID: "stop", Value: "s1"})
	send(t, fake.InteractionRequest(ctx, url, payload, slacktest.Redelivery{}))
	reqs := got()
	if len(reqs) != 2 || reqs[0].verifyErr != nil || reqs[1].verifyErr != nil {
		t.Fatalf("requests = %+v, want two that verify", reqs)
	}
	outer, err := slackevents.ParseEvent(reqs[0].body, slackevents.OptionNoVerifyToken())
	if err != nil || outer.Type != slackevents.URLVerification {
		t.Fatalf("url_verification: %+v, %v", outer, err)
	}
	if ch := outer.Data.(*slackevents.EventsAPIURLVerificationEvent).Challenge; ch != "challenge-1" {
		t.Errorf("challenge = %q", ch)
	}
	var cb slack.InteractionCallback
	if err := json.Unmarshal([]byte(reqs[1].form), &cb); err != nil {
		t.Fatalf("payload= does not parse as an interaction: %v", err)
	}
	if cb.Type != slack.InteractionTypeBlockActions || cb.Channel.ID != "C1" || cb.Container.MessageTs != "1.000001" || cb.ActionCallback.BlockActions[0].Value != "s1" {
		t.Errorf("interaction = %+v, want the click on stop", cb)
	}
}

func TestSignatureFailsWithAnotherSecret(t *testing.T) {
	fake, _ := start(t)
	url, got := receiver(t, "another-secret")
	send(t, fake.URLVerificationRequest(context.Background(), url, "c"))
	if reqs := got(); len(reqs) != 1 || reqs[0].verifyErr == nil {
		t.Errorf("requests = %+v, want the signature refused under another secret", reqs)
	}
}
