package slacktest_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/replyflow/replyflow/adapters/slack/slacktest"
)

func start(t *testing.T) (*slacktest.Server, *slack.Client) {
	t.Helper()
	fake := slacktest.New(slacktest.Options{AckTimeout: 200 * time.Millisecond, PingInterval: 50 * time.Millisecond})
	t.Cleanup(fake.Close)
	fake.AddChannel(slacktest.Channel{ID: "C1", Name: "general", Members: 7})
	return fake, slack.New(fake.BotToken, slack.OptionAPIURL(fake.APIURL()))
}

func TestAuthTestAndWrongToken(t *testing.T) {
	fake, api := start(t)
	auth, err := api.AuthTest()
	if err != nil {
		t.Fatalf("auth.test: %v", err)
	}
	if auth.UserID != fake.BotUserID || auth.TeamID != fake.TeamID || auth.BotID != fake.BotID {
		t.Errorf("auth.test = %+v, want the fake's bot", auth)
	}
	wrong := slack.New("xoxb-wrong", slack.OptionAPIURL(fake.APIURL()))
	if _, err := wrong.AuthTest(); err == nil || err.Error() != "invalid_auth" {
		t.Errorf("auth.test with a wrong token: err = %v, want invalid_auth", err)
	}
	if calls := fake.Calls("auth.test"); len(calls) != 2 || calls[1].Error != "invalid_auth" {
		t.Errorf("recorded %+v, want two auth.test calls, the second invalid_auth", calls)
	}
}

func TestPostMessageInThreadWithBlocksAndMetadata(t *testing.T) {
	fake, api := start(t)
	parent, _ := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "hello"})
	blocks := slack.MsgOptionBlocks(slack.NewSectionBlock(slack.NewTextBlockObject("mrkdwn", "*hi*", false, false), nil, nil))
	meta := slack.SlackMetadata{EventType: "replyflow_reply", EventPayload: map[string]any{"session": "s1", "part": 1}}
	_, ts, err := api.PostMessage("C1", slack.MsgOptionText("hi", false), blocks, slack.MsgOptionTS(parent.TS),
		slack.MsgOptionMetadata(meta), slack.MsgOptionDisableMarkdown())
	if err != nil {
		t.Fatalf("chat.postMessage: %v", err)
	}
	sent := fake.Sent("C1")
	if len(sent) != 1 {
		t.Fatalf("sent = %+v, want one message", sent)
	}
	m := sent[0]
	if m.TS != ts || m.ThreadTS != parent.TS || m.Text != "hi" || m.Mrkdwn != "false" || len(m.Blocks) == 0 {
		t.Errorf("sent %+v, want the reply in the thread with blocks and mrkdwn=false", m)
	}
	if m.Metadata == nil || m.Metadata.EventType != "replyflow_reply" || m.Metadata.EventPayload["session"] != "s1" {
		t.Errorf("metadata = %+v, want the event sent", m.Metadata)
	}
	if thread := fake.Thread("C1", parent.TS); len(thread) != 2 {
		t.Errorf("thread = %+v, want the parent and the reply", thread)
	}
	if _, _, err := api.PostMessage("C404", slack.MsgOptionText("x", false)); err == nil || err.Error() != "channel_not_found" {
		t.Errorf("post to an unknown channel: err = %v, want channel_not_found", err)
	}
}

func TestUpdateMessage(t *testing.T) {
	fake, api := start(t)
	_, ts, err := api.PostMessage("C1", slack.MsgOptionText("draft", false))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := api.UpdateMessage("C1", ts, slack.MsgOptionText("final", false)); err != nil {
		t.Fatalf("chat.update: %v", err)
	}
	if m, _ := fake.Message("C1", ts); m.Text != "final" || m.Edits != 1 {
		t.Errorf("message = %+v, want final after one edit", m)
	}
	user, _ := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "mine"})
	if _, _, _, err := api.UpdateMessage("C1", user.TS, slack.MsgOptionText("x", false)); err == nil || err.Error() != "cant_update_message" {
		t.Errorf("update of a user's message: err = %v, want cant_update_message", err)
	}
}

func TestHistoryAndRepliesFindMessagesByMetadata(t *testing.T) {
	fake, api := start(t)
	parent, _ := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "question"})
	meta := slack.SlackMetadata{EventType: "replyflow_reply", EventPayload: map[string]any{"turn": "t7"}}
	if _, _, err := api.PostMessage("C1", slack.MsgOptionText("answer", false), slack.MsgOptionTS(parent.TS), slack.MsgOptionMetadata(meta)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.PostMessage("C1", slack.MsgOptionText("top", false), slack.MsgOptionMetadata(meta)); err != nil {
		t.Fatal(err)
	}
	replies, _, _, err := api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: parent.TS, IncludeAllMetadata: true})
	if err != nil {
		t.Fatalf("conversations.replies: %v", err)
	}
	if len(replies) != 2 || replies[1].Metadata.EventPayload["turn"] != "t7" || replies[0].ReplyCount != 1 {
		t.Errorf("replies = %+v, want the parent and the reply with its metadata", replies)
	}
	history, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "C1", IncludeAllMetadata: true, Limit: 1})
	if err != nil {
		t.Fatalf("conversations.history: %v", err)
	}
	if len(history.Messages) != 1 || history.Messages[0].Text != "top" || history.Messages[0].Metadata.EventType != "replyflow_reply" || !history.HasMore {
		t.Fatalf("history page 1 = %+v, want the newest top-level message with metadata and more", history)
	}
	next, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "C1", Cursor: history.ResponseMetaData.NextCursor})
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Messages) != 1 || next.Messages[0].Text != "question" || next.Messages[0].Metadata.EventType != "" {
		t.Errorf("history page 2 = %+v, want the thread parent (no metadata without include_all_metadata)", next.Messages)
	}
}

func TestConversationInfo(t *testing.T) {
	_, api := start(t)
	ch, err := api.GetConversationInfo(&slack.GetConversationInfoInput{ChannelID: "C1", IncludeNumMembers: true})
	if err != nil {
		t.Fatalf("conversations.info: %v", err)
	}
	if ch.ID != "C1" || ch.NumMembers != 7 || !ch.IsChannel || ch.IsIM {
		t.Errorf("channel = %+v, want C1 with 7 members", ch)
	}
}

func TestReactionsAsSlackAnswersThem(t *testing.T) {
	fake, api := start(t)
	m, _ := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "hi"})
	item := slack.NewRefToMessage("C1", m.TS)
	if err := api.AddReaction("eyes", item); err != nil {
		t.Fatalf("reactions.add: %v", err)
	}
	if err := api.AddReaction("eyes", item); err == nil || err.Error() != "already_reacted" {
		t.Errorf("second reactions.add: err = %v, want already_reacted", err)
	}
	if got := fake.Reactions("C1", m.TS); len(got) != 1 || got[0] != "eyes" {
		t.Errorf("reactions = %v, want [eyes]", got)
	}
	if err := api.RemoveReaction("eyes", item); err != nil {
		t.Fatalf("reactions.remove: %v", err)
	}
	if err := api.RemoveReaction("eyes", item); err == nil || err.Error() != "no_reaction" {
		t.Errorf("second reactions.remove: err = %v, want no_reaction", err)
	}
	if got := fake.Reactions("C1", m.TS); len(got) != 0 {
		t.Errorf("reactions = %v, want none", got)
	}
}

func TestAssistantStatusAndEphemeral(t *testing.T) {
	fake, api := start(t)
	m, _ := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "hi"})
	err := api.SetAssistantThreadsStatus(slack.AssistantThreadsSetStatusParameters{ChannelID: "C1", ThreadTS: m.TS, Status: "is thinking…"})
	if err != nil {
		t.Fatalf("assistant.threads.setStatus: %v", err)
	}
	if st := fake.Statuses("C1", m.TS); len(st) != 1 || st[0].Status != "is thinking…" {
		t.Errorf("statuses = %+v, want the one set", st)
	}
	if _, err := api.PostEphemeral("C1", "U1", slack.MsgOptionText("only you", false)); err != nil {
		t.Fatalf("chat.postEphemeral: %v", err)
	}
	if e := fake.Ephemerals("C1"); len(e) != 1 || e[0].User != "U1" || e[0].Text != "only you" {
		t.Errorf("ephemerals = %+v, want the one posted", e)
	}
}

func TestFaults(t *testing.T) {
	fake, api := start(t)
	fake.AddChannel(slacktest.Channel{ID: "C2"})
	fake.FailNext("chat.postMessage", 1, slacktest.Fault{Status: http.StatusTooManyRequests, RetryAfter: 3, When: slacktest.InChannel("C2")})
	fake.FailNext("chat.postMessage", 1, slacktest.ServerError())
	fake.FailNext("reactions.add", 1, slacktest.SlackError("ratelimited"))
	fake.FailNext("reactions.add", 1, slacktest.Fault{Error: "ratelimited"}) // status 0 is 200

	// The fault for C2 waits for its call; the server error is next in line.
	if _, _, err := api.PostMessage("C1", slack.MsgOptionText("a", false)); !isStatus(err, http.StatusServiceUnavailable) {
		t.Errorf("first post: err = %v, want a 503", err)
	}
	var limited *slack.RateLimitedError
	if _, _, err := api.PostMessage("C2", slack.MsgOptionText("b", false)); !errors.As(err, &limited) || limited.RetryAfter != 3*time.Second {
		t.Errorf("post to C2: err = %v, want rate limited for 3s", err)
	}
	if _, _, err := api.PostMessage("C2", slack.MsgOptionText("c", false)); err != nil {
		t.Errorf("third post: %v, want it served", err)
	}
	for range 2 {
		if err := api.AddReaction("eyes", slack.NewRefToMessage("C1", "1.0")); err == nil || err.Error() != "ratelimited" {
			t.Errorf("reactions.add: err = %v, want ratelimited", err)
		}
	}
	if n := len(fake.Sent("C2")); n != 1 {
		t.Errorf("C2 holds %d messages, want only the served one", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := fake.WaitFor(ctx, func() bool { return len(fake.Calls("chat.postMessage", "reactions.add")) == 5 }); err != nil {
		t.Error(err)
	}
}

func isStatus(err error, code int) bool {
	var status slack.StatusCodeError
	return errors.As(err, &status) && status.Code == code
}
