package slack_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/slack"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/pipeline"
)

func outboundClient(t *testing.T, fake *slacktest.Server) *slack.Client {
	t.Helper()
	c, err := slack.NewClient(slack.ClientConfig{Token: fake.BotToken, APIURL: fake.APIURL(), PostInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func outboundFake(t *testing.T) *slacktest.Server {
	t.Helper()
	fake := slacktest.New(slacktest.Options{})
	t.Cleanup(fake.Close)
	fake.AddChannel(slacktest.Channel{ID: "C1", Name: "general", Members: 7})
	fake.AddChannel(slacktest.Channel{ID: "D1", Members: 2})
	return fake
}

func outboundSession(chat string) pipeline.SessionKey {
	return pipeline.SessionKey{Channel: "slack", Account: "T0TEST", Chat: chat}
}

func TestSendPostsInTheThreadWithMetadata(t *testing.T) {
	fake := outboundFake(t)
	c := outboundClient(t, fake)
	parent, _ := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "hello"})
	ts, err := c.Send(context.Background(), pipeline.Delivery{Session: outboundSession("C1"), IdempotencyKey: "turn1/0", ThreadID: parent.TS, Text: "a **bold** reply", Total: 1})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	sent := fake.Sent("C1")
	if len(sent) != 1 {
		t.Fatalf("sent = %+v, want one message", sent)
	}
	m := sent[0]
	if m.TS != ts || m.ThreadTS != parent.TS || m.Text != "a *bold* reply" || m.Mrkdwn == "false" || len(m.Blocks) != 0 {
		t.Errorf("sent %+v (ts %s), want the mrkdwn reply in the thread, without blocks", m, ts)
	}
	if m.Metadata == nil || m.Metadata.EventType != slack.ChunkEventType || m.Metadata.EventPayload["key"] != "turn1/0" {
		t.Errorf("metadata = %+v, want the idempotency key", m.Metadata)
	}
}

func TestSendTopLevelInADirectMessage(t *testing.T) {
	fake := outboundFake(t)
	c := outboundClient(t, fake)
	fake.AddMessage(slacktest.Post{Channel: "D1", User: "U1", Text: "hi"})
	ts, err := c.Send(context.Background(), pipeline.Delivery{Session: outboundSession("D1"), IdempotencyKey: "k", Text: "hello", Total: 1})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if sent := fake.Sent("D1"); len(sent) != 1 || sent[0].TS != ts || sent[0].ThreadTS != "" {
		t.Errorf("sent %+v, want one top-level message %s", sent, ts)
	}
}

func TestSendPrivateReplyIsEphemeralToThatUser(t *testing.T) {
	fake := outboundFake(t)
	c := outboundClient(t, fake)
	parent, _ := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "approve?"})
	ts, err := c.Send(context.Background(), pipeline.Delivery{Session: outboundSession("C1"), IdempotencyKey: "notice-1", ThreadID: parent.TS,
		Text: "⚠️ only an owner may decide & approve", Total: 1, PrivateTo: "U0MALLORY"})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if sent := fake.Sent("C1"); len(sent) != 0 {
		t.Errorf("posted %+v to the channel, want nothing everyone sees", sent)
	}
	eph := fake.Ephemerals("C1")
	if len(eph) != 1 || eph[0].User != "U0MALLORY" || eph[0].ThreadTS != parent.TS || eph[0].TS != ts ||
		eph[0].Text != "⚠️ only an owner may decide &amp; approve" {
		t.Errorf("ephemerals = %+v (ts %s), want one rendered notice to U0MALLORY in the thread", eph, ts)
	}
}

func TestSendButtonsAsBlocks(t *testing.T) {
	fake := outboundFake(t)
	c := outboundClient(t, fake)
	buttons := []pipeline.Button{{Text: "Approve", Action: "approve:p1"}, {Text: "Reject", Action: "reject:p1"}}
	ts, err := c.Send(context.Background(), pipeline.Delivery{Session: outboundSession("D1"), IdempotencyKey: "k", Text: "Run `rm`?", Buttons: buttons, Total: 1})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	m, _ := fake.Message("D1", ts)
	var blocks []struct {
		Type     string `json:"type"`
		Text     struct{ Type, Text string }
		Elements []struct {
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
			Text     struct{ Text string }
		}
	}
	if err := json.Unmarshal(m.Blocks, &blocks); err != nil {
		t.Fatalf("blocks %s: %v", m.Blocks, err)
	}
	if len(blocks) != 2 || blocks[0].Type != "section" || blocks[0].Text.Type != "mrkdwn" || blocks[0].Text.Text != "Run `rm`?" || blocks[1].Type != "actions" {
		t.Fatalf("blocks = %s, want a mrkdwn section and an actions block", m.Blocks)
	}
	for i, e := range blocks[1].Elements {
		if e.ActionID != buttons[i].Action || e.Value != buttons[i].Action || e.Text.Text != buttons[i].Text {
			t.Errorf("button %d = %+v, want %+v", i, e, buttons[i])
		}
	}
	if len(blocks[1].Elements) != 2 || m.Text != "Run `rm`?" {
		t.Errorf("message %+v, want two buttons and the text as fallback", m)
	}
}

// A Send whose answer was lost is retried, maybe on another worker: the
// retry finds the first post by its key and posts nothing.
func TestRetriedSendDoesNotPostAgain(t *testing.T) {
	fake := outboundFake(t)
	parent, _ := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "hello"})
	fake.AddMessage(slacktest.Post{Channel: "D1", User: "U1", Text: "hi"})
	for _, d := range []pipeline.Delivery{
		{Session: outboundSession("C1"), IdempotencyKey: "turn1/0", ThreadID: parent.TS, Text: "in the thread", Total: 2},
		{Session: outboundSession("D1"), IdempotencyKey: "turn2/0", Text: "top-level", Total: 1},
	} {
		first, err := outboundClient(t, fake).Send(context.Background(), d)
		if err != nil {
			t.Fatalf("first Send: %v", err)
		}
		posts := len(fake.Calls("chat.postMessage"))
		again, err := outboundClient(t, fake).Send(context.Background(), d) // a worker with empty memory
		if err != nil {
			t.Fatalf("retried Send: %v", err)
		}
		if again != first || len(fake.Calls("chat.postMessage")) != posts {
			t.Errorf("retry of %s returned %s after %d posts, want %s and no new post", d.IdempotencyKey, again, len(fake.Calls("chat.postMessage")), first)
		}
		if sent := fake.Sent(d.Session.Chat); len(sent) != 1 {
			t.Errorf("sent in %s: %+v, want one message", d.Session.Chat, sent)
		}
	}
	// Another chunk of the same thread is a different key: it is posted.
	next, err := outboundClient(t, fake).Send(context.Background(), pipeline.Delivery{Session: outboundSession("C1"), IdempotencyKey: "turn1/1", ThreadID: parent.TS, Text: "part two", Index: 1, Total: 2})
	if err != nil || len(fake.Sent("C1")) != 2 {
		t.Errorf("second chunk: ts %s, err %v, sent %+v; want a second post", next, err, fake.Sent("C1"))
	}
}

// A post whose answer was lost fails retryably though Slack made it; the
// retry, by the same client (whose memory of sent keys holds only posts
// it heard of) or another, finds it and posts nothing.
func TestSendAfterALostAnswerDoesNotPostAgain(t *testing.T) {
	for name, fault := range map[string]slacktest.Fault{"503": slacktest.AnswerLost(), "hang-up": slacktest.HungUp()} {
		fake := outboundFake(t)
		parent, _ := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "hello"})
		d := pipeline.Delivery{Session: outboundSession("C1"), IdempotencyKey: "turn1/0", ThreadID: parent.TS, Text: "once", Total: 1}
		c := outboundClient(t, fake)
		fake.FailNext("chat.postMessage", 1, fault)
		_, err := c.Send(context.Background(), d)
		if kind, _ := adapters.Classify(err); kind != adapters.Transient {
			t.Fatalf("%s after the post: Send = %v, want a transient error", name, err)
		}
		for _, retry := range []*slack.Client{c, outboundClient(t, fake)} {
			ts, err := retry.Send(context.Background(), d)
			if sent := fake.Sent("C1"); err != nil || len(sent) != 1 || sent[0].TS != ts {
				t.Errorf("%s after the post: retried Send = %s, %v with %d posts, want the one post's ts", name, ts, err, len(sent))
			}
		}
		if calls := fake.Calls("chat.postMessage"); len(calls) != 1 {
			t.Errorf("%s after the post: chat.postMessage called %d times, want once", name, len(calls))
		}
	}
}

func TestRateLimitStormIsClassifiedWithRetryAfter(t *testing.T) {
	fake := outboundFake(t)
	c := outboundClient(t, fake)
	d := pipeline.Delivery{Session: outboundSession("D1"), IdempotencyKey: "k", Text: "hello", Total: 1}
	fake.FailNext("chat.postMessage", 5, slacktest.RateLimited(30))
	_, err := c.Send(context.Background(), d)
	if kind, wait := adapters.Classify(err); kind != adapters.RateLimited || wait != 30*time.Second {
		t.Fatalf("Send under 429: %v (%s, %s), want RateLimited after 30s", err, kind, wait)
	}
	// The channel cools down: the next tries are refused here, with the
	// time left, without another call to Slack.
	for range 3 {
		_, err = c.Send(context.Background(), d)
		if kind, wait := adapters.Classify(err); kind != adapters.RateLimited || wait <= 0 || wait > 30*time.Second {
			t.Fatalf("Send while cooling down: %v, want RateLimited within 30s", err)
		}
	}
	if calls := fake.Calls("chat.postMessage"); len(calls) != 1 {
		t.Errorf("chat.postMessage called %d times, want once", len(calls))
	}
	// A 429 on the duplicate lookup is classified the same way.
	fake.FailNext("conversations.history", 1, slacktest.RateLimited(7))
	_, err = outboundClient(t, fake).Send(context.Background(), d)
	if kind, wait := adapters.Classify(err); kind != adapters.RateLimited || wait != 7*time.Second {
		t.Errorf("Send with the lookup under 429: %v, want RateLimited after 7s", err)
	}
}

func TestErrorsAreClassified(t *testing.T) {
	for _, tc := range []struct {
		fault slacktest.Fault
		want  adapters.ErrorKind
	}{
		{slacktest.ServerError(), adapters.Transient},
		{slacktest.SlackError("internal_error"), adapters.Transient},
		{slacktest.SlackError("not_in_channel"), adapters.Permanent},
		{slacktest.SlackError("msg_too_long"), adapters.Permanent},
		{slacktest.SlackError("invalid_auth"), adapters.Permanent},
	} {
		fake := outboundFake(t)
		fake.FailNext("chat.postMessage", 1, tc.fault)
		_, err := outboundClient(t, fake).Send(context.Background(), pipeline.Delivery{Session: outboundSession("D1"), IdempotencyKey: "k", Text: "x", Total: 1})
		var classified *adapters.Error
		if !errors.As(err, &classified) || classified.Kind != tc.want || classified.Op != "chat.postMessage" {
			t.Errorf("fault %+v: err %v, want %s from chat.postMessage", tc.fault, err, tc.want)
		}
		// slack-go's own retries are off: the activity's policy retries.
		if calls := fake.Calls("chat.postMessage"); len(calls) != 1 {
			t.Errorf("fault %+v: chat.postMessage called %d times, want once", tc.fault, len(calls))
		}
	}
	fake := outboundFake(t)
	_, err := outboundClient(t, fake).Send(context.Background(), pipeline.Delivery{Session: outboundSession("C404"), IdempotencyKey: "k", Text: "x", Total: 1})
	if kind, _ := adapters.Classify(err); kind != adapters.Permanent {
		t.Errorf("Send to an unknown channel: %v, want Permanent", err)
	}
}

func TestReactionLifecycle(t *testing.T) {
	fake := outboundFake(t)
	c := outboundClient(t, fake)
	ctx := context.Background()
	msg, _ := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "hello"})
	change := func(state pipeline.ReactionState) pipeline.ReactionChange {
		return pipeline.ReactionChange{Session: outboundSession("C1"), MessageID: msg.TS, ThreadID: msg.TS, State: state}
	}
	steps := []struct {
		state pipeline.ReactionState
		want  string
	}{
		{pipeline.ReactionReceived, "eyes"},
		{pipeline.ReactionReceived, "eyes"}, // repeated: already_reacted from Slack
		{pipeline.ReactionThinking, "writing_hand"},
		{pipeline.ReactionDone, "white_check_mark"},
		{pipeline.ReactionNone, ""},
		{pipeline.ReactionNone, ""},
	}
	for _, s := range steps {
		if err := c.SetReaction(ctx, change(s.state)); err != nil {
			t.Fatalf("SetReaction(%q): %v", s.state, err)
		}
		got := fake.Reactions("C1", msg.TS)
		if (s.want == "" && len(got) != 0) || (s.want != "" && (len(got) != 1 || got[0] != s.want)) {
			t.Fatalf("after %q the reactions are %v, want [%s]", s.state, got, s.want)
		}
	}
	// Slack answering already_reacted and no_reaction is success.
	fake.FailNext("reactions.remove", 1, slacktest.SlackError("no_reaction"))
	fake.FailNext("reactions.add", 1, slacktest.SlackError("already_reacted"))
	if err := c.SetReaction(ctx, change(pipeline.ReactionThinking)); err != nil {
		t.Errorf("SetReaction with no_reaction and already_reacted: %v", err)
	}
	if calls := fake.Calls("reactions.add", "reactions.remove"); calls[len(calls)-1].Error != "already_reacted" {
		t.Errorf("last reaction call %+v, want the already_reacted fault used", calls[len(calls)-1])
	}
}

// A worker that did not set the reaction (restarted) still replaces it.
func TestReactionReplacedByAnotherWorker(t *testing.T) {
	fake := outboundFake(t)
	ctx := context.Background()
	msg, _ := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "hello"})
	rc := pipeline.ReactionChange{Session: outboundSession("C1"), MessageID: msg.TS, State: pipeline.ReactionThinking}
	if err := outboundClient(t, fake).SetReaction(ctx, rc); err != nil {
		t.Fatal(err)
	}
	rc.State = pipeline.ReactionDone
	if err := outboundClient(t, fake).SetReaction(ctx, rc); err != nil {
		t.Fatal(err)
	}
	if got := fake.Reactions("C1", msg.TS); len(got) != 1 || got[0] != "white_check_mark" {
		t.Errorf("reactions = %v, want [white_check_mark]", got)
	}
}

func TestTypingSetAndClearedAfterTheReply(t *testing.T) {
	fake := outboundFake(t)
	c := outboundClient(t, fake)
	ctx := context.Background()
	parent, _ := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "hello"})
	if err := c.Typing(ctx, outboundSession("C1"), parent.TS); err != nil {
		t.Fatalf("Typing: %v", err)
	}
	if st := fake.Statuses("C1", parent.TS); len(st) != 1 || st[0].Status != slack.TypingStatus {
		t.Fatalf("statuses = %+v, want %q", st, slack.TypingStatus)
	}
	d := pipeline.Delivery{Session: outboundSession("C1"), IdempotencyKey: "k0", ThreadID: parent.TS, Text: "one", Index: 0, Total: 2}
	if _, err := c.Send(ctx, d); err != nil {
		t.Fatal(err)
	}
	if st := fake.Statuses("C1", parent.TS); len(st) != 1 {
		t.Fatalf("statuses after the first of two chunks = %+v, want the status kept", st)
	}
	d.IdempotencyKey, d.Index, d.Text = "k1", 1, "two"
	if _, err := c.Send(ctx, d); err != nil {
		t.Fatal(err)
	}
	if st := fake.Statuses("C1", parent.TS); len(st) != 2 || st[1].Status != "" {
		t.Errorf("statuses after the last chunk = %+v, want it cleared", st)
	}
	// The root lane of a DM has no thread to show a status in.
	if err := c.Typing(ctx, outboundSession("D1"), ""); err != nil || len(fake.Calls("assistant.threads.setStatus")) != 2 {
		t.Errorf("Typing in a DM's root lane: %v, %d calls; want nothing done", err, len(fake.Calls("assistant.threads.setStatus")))
	}
	// Without the assistant feature Slack refuses it: not a failure.
	fake.FailNext("assistant.threads.setStatus", 1, slacktest.SlackError("missing_scope"))
	if err := c.Typing(ctx, outboundSession("C1"), parent.TS); err != nil {
		t.Errorf("Typing refused by the workspace: %v, want nil", err)
	}
	fake.FailNext("assistant.threads.setStatus", 1, slacktest.ServerError())
	if err := c.Typing(ctx, outboundSession("C1"), parent.TS); err == nil {
		t.Error("Typing during an outage succeeded, want a transient error")
	}
}

func TestEditReplacesTextAndDropsButtons(t *testing.T) {
	fake := outboundFake(t)
	c := outboundClient(t, fake)
	ctx := context.Background()
	ts, err := c.Send(ctx, pipeline.Delivery{Session: outboundSession("D1"), IdempotencyKey: "k", Text: "Run it?", Buttons: []pipeline.Button{{Text: "Yes", Action: "approve:p1"}}, Total: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Edit(ctx, pipeline.Edit{Session: outboundSession("D1"), PlatformMessageID: ts, Text: "Run it? **approved**"}); err != nil {
		t.Fatalf("Edit: %v", err)
	}
	m, _ := fake.Message("D1", ts)
	var blocks []json.RawMessage
	if m.Text != "Run it? *approved*" || m.Edits != 1 || json.Unmarshal(m.Blocks, &blocks) != nil || len(blocks) != 0 {
		t.Errorf("edited message %+v (blocks %s), want the new text and no blocks", m, m.Blocks)
	}
	err = c.Edit(ctx, pipeline.Edit{Session: outboundSession("D1"), PlatformMessageID: "1.000009", Text: "x"})
	if kind, _ := adapters.Classify(err); kind != adapters.Permanent {
		t.Errorf("Edit of a missing message: %v, want Permanent", err)
	}
}

// A proposal longer than a section's 3,000 characters is cut into
// sections at line ends, and nothing is lost.
func TestLongProposalIsCutIntoSections(t *testing.T) {
	fake := outboundFake(t)
	line := strings.Repeat("é", 99) + "\n" // 199 bytes
	text := strings.Repeat(line, 40) + strings.Repeat("x", 3500)
	ts, err := outboundClient(t, fake).Send(context.Background(), pipeline.Delivery{Session: outboundSession("D1"), IdempotencyKey: "k", Text: text, Buttons: []pipeline.Button{{Text: "Yes", Action: "approve:p1"}}, Total: 1})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := fake.Message("D1", ts)
	var blocks []struct {
		Type string `json:"type"`
		Text struct{ Text string }
	}
	if err := json.Unmarshal(m.Blocks, &blocks); err != nil {
		t.Fatal(err)
	}
	var joined []string
	for _, b := range blocks[:len(blocks)-1] {
		if b.Type != "section" || len(b.Text.Text) > 3000 || !utf8.ValidString(b.Text.Text) {
			t.Errorf("block %s of %d bytes, want a valid section of at most 3000", b.Type, len(b.Text.Text))
		}
		joined = append(joined, b.Text.Text)
	}
	if got := strings.Join(joined, ""); strings.ReplaceAll(got, "\n", "") != strings.ReplaceAll(text, "\n", "") || len(blocks) < 3 {
		t.Errorf("%d sections lose or change text", len(blocks)-1)
	}
}
