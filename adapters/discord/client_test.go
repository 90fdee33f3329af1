package discord

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/pipeline"
)

const (
	outGuild   = "100000000000000100"
	outGeneral = "100000000000000200" // a guild text channel
	outThread  = "100000000000000201" // a thread in general
	outDM      = "100000000000000300"
	outAda     = "100000000000000500"
	outRole    = "100000000000000600"
)

// outFake is a fake Discord with a guild, a text channel, a thread in it
// and a DM with ada.
func outFake(t *testing.T, opts discordtest.Options) *discordtest.Server {
	t.Helper()
	fake := discordtest.New(opts)
	t.Cleanup(fake.Close)
	fake.AddGuild(discordtest.Guild{ID: outGuild, Name: "home", Members: 3})
	fake.AddChannel(discordtest.Channel{ID: outGeneral, Type: discordtest.GuildText, GuildID: outGuild, Name: "general"})
	fake.AddChannel(discordtest.Channel{ID: outThread, Type: discordtest.PublicThread, GuildID: outGuild, ParentID: outGeneral, Name: "a thread"})
	fake.AddChannel(discordtest.Channel{ID: outDM, Type: discordtest.DM, Recipient: outAda})
	fake.AddUser(discordtest.User{ID: outAda, Name: "ada"})
	return fake
}

// outClient is a Client aimed at fake by its API URL, as the worker is
// aimed at a fake in another process.
func outClient(t *testing.T, fake *discordtest.Server, cfg ClientConfig) *Client {
	t.Helper()
	cfg.Token = fake.Token
	if cfg.APIURL == "" && cfg.HTTPClient == nil {
		cfg.APIURL = fake.APIURL()
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func outSession(chat string) pipeline.SessionKey {
	return pipeline.SessionKey{Channel: Channel, Account: "900000000000000001", Chat: chat}
}

func outKind(err error) (adapters.ErrorKind, time.Duration) { return adapters.Classify(err) }

func TestNewClientNeedsATokenAndMakesNoCall(t *testing.T) {
	if _, err := NewClient(ClientConfig{Token: "Bot "}); err == nil || !strings.Contains(err.Error(), "REPLYFLOW_DISCORD_TOKEN") {
		t.Errorf("NewClient without a token: %v, want an error naming REPLYFLOW_DISCORD_TOKEN", err)
	}
	if _, err := NewClient(ClientConfig{Token: "x", APIURL: "not a url"}); err == nil {
		t.Error("NewClient with a relative API URL succeeded")
	}
	fake := outFake(t, discordtest.Options{})
	outClient(t, fake, ClientConfig{})
	if calls := fake.Calls(); len(calls) != 0 {
		t.Errorf("NewClient made calls: %+v", calls)
	}
}

// A reply goes to the thread when the Delivery names one, else to the
// session's channel, quoting its message; the bot's token is sent as a
// bot's.
func TestSendPostsInTheThreadOrTheChannel(t *testing.T) {
	fake := outFake(t, discordtest.Options{})
	ctx := context.Background()
	inThread := fake.Post(discordtest.Post{Channel: outThread, Author: outAda, Content: "in the thread"})
	inChannel := fake.Post(discordtest.Post{Channel: outGeneral, Author: outAda, Content: "in the channel"})
	inDM := fake.Post(discordtest.Post{Channel: outDM, Author: outAda, Content: "in the DM"})
	for _, c := range []*Client{
		outClient(t, fake, ClientConfig{}),
		outClient(t, fake, ClientConfig{HTTPClient: fake.Client()}), // aimed by its HTTP client instead
	} {
		for _, tc := range []struct {
			d       pipeline.Delivery
			channel string
			replyTo string
		}{
			{pipeline.Delivery{Session: outSession(outGeneral), ThreadID: outThread, ReplyTo: inThread.ID, Text: "thread reply", Total: 1}, outThread, inThread.ID},
			{pipeline.Delivery{Session: outSession(outGeneral), ReplyTo: inChannel.ID, Text: "channel reply", Total: 1}, outGeneral, inChannel.ID},
			{pipeline.Delivery{Session: outSession(outDM), ReplyTo: inDM.ID, Text: "DM reply", Total: 1}, outDM, inDM.ID},
			{pipeline.Delivery{Session: outSession(outGeneral), Text: "no reply", Total: 1}, outGeneral, ""},
		} {
			tc.d.IdempotencyKey = fmt.Sprintf("%p/%s", c, tc.d.Text)
			id, err := c.Send(ctx, tc.d)
			if err != nil {
				t.Fatalf("Send %q: %v", tc.d.Text, err)
			}
			m, ok := fake.Message(tc.channel, id)
			if !ok || m.Content != tc.d.Text || m.Reply != tc.replyTo || m.Author.ID != fake.BotID {
				t.Errorf("Send %q: message %+v in %s, want it there replying to %q", tc.d.Text, m, tc.channel, tc.replyTo)
			}
		}
	}
	if sent := fake.Sent(outGeneral); len(sent) != 4 {
		t.Errorf("general holds %d bot messages, want 4 (none meant for the thread)", len(sent))
	}
	for _, call := range fake.Calls(discordtest.RouteSend) {
		if call.Auth != "Bot "+fake.Token || call.Status != 200 {
			t.Errorf("call %s answered %d with auth %q, want 200 for the bot token", call.Path, call.Status, call.Auth)
		}
	}
	if _, err := outClient(t, fake, ClientConfig{}).Send(ctx, pipeline.Delivery{Session: outSession(""), Text: "x"}); err == nil {
		t.Error("Send without a channel succeeded")
	} else if kind, _ := outKind(err); kind != adapters.Permanent {
		t.Errorf("Send without a channel: %v, want Permanent", err)
	}
}

// A reply to a message deleted since is sent as a plain message, not
// refused.
func TestSoftReplyToADeletedMessage(t *testing.T) {
	fake := outFake(t, discordtest.Options{})
	asked := fake.Post(discordtest.Post{Channel: outGeneral, Author: outAda, Content: "question"})
	fake.Delete(outGeneral, asked.ID)
	id, err := outClient(t, fake, ClientConfig{}).Send(context.Background(),
		pipeline.Delivery{Session: outSession(outGeneral), IdempotencyKey: "k", ReplyTo: asked.ID, Text: "answer", Total: 1})
	if err != nil {
		t.Fatalf("Send replying to a deleted message: %v", err)
	}
	if m, _ := fake.Message(outGeneral, id); m.Reply != "" || m.Content != "answer" {
		t.Errorf("message %+v, want a plain message", m)
	}
	ref, _ := fake.Calls(discordtest.RouteSend)[0].Body["message_reference"].(map[string]any)
	if ref["message_id"] != asked.ID || ref["fail_if_not_exists"] != false {
		t.Errorf("message_reference = %v, want a soft reference to %s", ref, asked.ID)
	}
}

// Model text that names users, roles and everyone pings no one, nor the
// author of the message answered.
func TestAllowedMentionsPingNoOne(t *testing.T) {
	fake := outFake(t, discordtest.Options{})
	asked := fake.Post(discordtest.Post{Channel: outGeneral, Author: outAda, Content: "ping them all"})
	text := fmt.Sprintf("<@%s> <@!%s> <@&%s> @everyone @here", outAda, outAda, outRole)
	c := outClient(t, fake, ClientConfig{})
	ctx := context.Background()
	id, err := c.Send(ctx, pipeline.Delivery{Session: outSession(outGeneral), IdempotencyKey: "k", ReplyTo: asked.ID, Text: text, Total: 1})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := fake.Message(outGeneral, id)
	if !m.Pings.None() || m.AllowedMentions == nil || len(m.AllowedMentions.Parse) != 0 || m.AllowedMentions.RepliedUser {
		t.Errorf("pings %+v with allowed_mentions %+v, want none", m.Pings, m.AllowedMentions)
	}
	if len(m.Mentions) != 1 || m.Reply != asked.ID {
		t.Errorf("message %+v, want ada shown as mentioned (not pinged) in a reply", m)
	}
	if err := c.Edit(ctx, pipeline.Edit{Session: outSession(outGeneral), PlatformMessageID: id, Text: text + " again"}); err != nil {
		t.Fatal(err)
	}
	if m, _ := fake.Message(outGeneral, id); !m.Pings.None() {
		t.Errorf("edited message pings %+v, want none", m.Pings)
	}
}

// A Deliver retried after Discord created its message but the answer was
// lost, by the same worker or another, gets that message back: the nonce
// is the same, enforced, and Discord creates no second message.
func TestRetriedSendAfterALostAnswerReturnsTheSameMessage(t *testing.T) {
	for name, fault := range map[string]discordtest.Fault{"500 after the post": discordtest.AnswerLost(), "hung up": discordtest.HungUp()} {
		t.Run(name, func(t *testing.T) {
			fake := outFake(t, discordtest.Options{})
			asked := fake.Post(discordtest.Post{Channel: outGeneral, Author: outAda, Content: "hello"})
			d := pipeline.Delivery{Session: outSession(outGeneral), IdempotencyKey: "session:discord:b:c/turn-3/0", ReplyTo: asked.ID, Text: "once", Total: 2}
			c := outClient(t, fake, ClientConfig{})
			fake.FailNext(discordtest.RouteSend, 1, fault)
			if _, err := c.Send(context.Background(), d); err == nil {
				t.Fatal("Send whose answer was lost succeeded")
			} else if kind, _ := outKind(err); kind != adapters.Transient {
				t.Fatalf("Send whose answer was lost: %v, want Transient", err)
			}
			for _, retry := range []*Client{c, outClient(t, fake, ClientConfig{})} {
				id, err := retry.Send(context.Background(), d)
				if sent := fake.Sent(outGeneral); err != nil || len(sent) != 1 || sent[0].ID != id {
					t.Errorf("retried Send = %s, %v with %d messages, want the one message", id, err, len(sent))
				}
			}
			calls := fake.Calls(discordtest.RouteSend)
			if len(calls) != 3 {
				t.Fatalf("%d sends, want 3", len(calls))
			}
			for _, call := range calls {
				if call.Body["nonce"] != Nonce(d.IdempotencyKey) || call.Body["enforce_nonce"] != true {
					t.Errorf("send carried nonce %v enforce %v, want %s enforced", call.Body["nonce"], call.Body["enforce_nonce"], Nonce(d.IdempotencyKey))
				}
			}
			// The next chunk has a key of its own: a new message.
			d.IdempotencyKey, d.Index, d.Text = "session:discord:b:c/turn-3/1", 1, "twice"
			if _, err := c.Send(context.Background(), d); err != nil || len(fake.Sent(outGeneral)) != 2 {
				t.Errorf("next chunk: %v, %d messages; want a second message", err, len(fake.Sent(outGeneral)))
			}
		})
	}
}

func TestSendButtonsAndEditClearsThem(t *testing.T) {
	fake := outFake(t, discordtest.Options{})
	c := outClient(t, fake, ClientConfig{})
	ctx := context.Background()
	buttons := []pipeline.Button{{Text: "Approve", Action: "approve:p1"}, {Text: "Reject", Action: "reject:p1"}}
	id, err := c.Send(ctx, pipeline.Delivery{Session: outSession(outGeneral), ThreadID: outThread, IdempotencyKey: "k", Text: "Run `rm`?", Buttons: buttons, Total: 1})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := fake.Message(outThread, id)
	want := []discordtest.Button{{CustomID: "approve:p1", Label: "Approve", Style: 3}, {CustomID: "reject:p1", Label: "Reject", Style: 4}}
	if len(m.Buttons) != 2 || m.Buttons[0] != want[0] || m.Buttons[1] != want[1] {
		t.Errorf("buttons = %+v, want %+v", m.Buttons, want)
	}
	err = c.Edit(ctx, pipeline.Edit{Session: outSession(outGeneral), ThreadID: outThread, PlatformMessageID: id, Text: "Run `rm`? **approved** by ada"})
	if err != nil {
		t.Fatalf("Edit: %v", err)
	}
	m, _ = fake.Message(outThread, id)
	if m.Content != "Run `rm`? **approved** by ada" || len(m.Buttons) != 0 || len(m.Components) != 0 || m.Edits != 1 {
		t.Errorf("edited message %+v, want the outcome without buttons", m)
	}
	if body := fake.Calls(discordtest.RouteEdit)[0].Body; fmt.Sprint(body["components"]) != "[]" {
		t.Errorf("edit sent components %v, want an empty list", body["components"])
	}
	fake.Delete(outThread, id)
	err = c.Edit(ctx, pipeline.Edit{Session: outSession(outGeneral), ThreadID: outThread, PlatformMessageID: id, Text: "x"})
	if kind, _ := outKind(err); kind != adapters.Permanent || !strings.Contains(err.Error(), "gone") {
		t.Errorf("Edit of a deleted message: %v, want Permanent saying it is gone", err)
	}
}

func TestTypingInTheThreadOrTheChannel(t *testing.T) {
	fake := outFake(t, discordtest.Options{})
	c := outClient(t, fake, ClientConfig{})
	ctx := context.Background()
	if err := c.Typing(ctx, outSession(outGeneral), outThread); err != nil {
		t.Fatal(err)
	}
	if err := c.Typing(ctx, outSession(outDM), ""); err != nil {
		t.Fatal(err)
	}
	if len(fake.Typing(outThread)) != 1 || len(fake.Typing(outDM)) != 1 || len(fake.Typing(outGeneral)) != 0 {
		t.Errorf("typing in thread %v, DM %v, general %v; want once in the thread and the DM", fake.Typing(outThread), fake.Typing(outDM), fake.Typing(outGeneral))
	}
	if TypingInterval >= 10*time.Second {
		t.Errorf("TypingInterval %s outlasts Discord's indicator", TypingInterval)
	}
}

// Chunks of 2000 from pipeline.Chunk, with fences reopened and
// characters outside the BMP, are accepted by Discord's limit once
// rendered; a longer text is cut rather than refused.
func TestChunksOf2000AreAccepted(t *testing.T) {
	fake := outFake(t, discordtest.Options{})
	c := outClient(t, fake, ClientConfig{})
	var b strings.Builder
	b.WriteString("#### Plan\n\n")
	for i := range 40 {
		fmt.Fprintf(&b, "Step %d: héllo wörld 👋 for <@%s>, with words enough to make a long line of it.\n", i, outAda)
	}
	b.WriteString("```go\n")
	for i := range 150 {
		fmt.Fprintf(&b, "fmt.Println(\"line %d — ünïcödé 🚀\") // #### not a heading\n", i)
	}
	b.WriteString("```\n\n##### Done\n")
	chunks := pipeline.Chunk(b.String(), MessageLimit)
	reopened, longest := 0, 0
	for i, chunk := range chunks {
		if i > 0 && strings.HasPrefix(chunk, "```go\n") {
			reopened++
		}
		longest = max(longest, unitLen(chunk))
		d := pipeline.Delivery{Session: outSession(outGeneral), IdempotencyKey: fmt.Sprintf("turn/%d", i), Text: chunk, Index: i, Total: len(chunks)}
		if _, err := c.Send(context.Background(), d); err != nil {
			t.Fatalf("chunk %d of %d (%d units): %v", i+1, len(chunks), unitLen(chunk), err)
		}
	}
	if len(chunks) < 4 || reopened < 2 || longest < MessageLimit-100 {
		t.Fatalf("%d chunks, %d reopening the fence, longest %d: the text does not test the limit", len(chunks), reopened, longest)
	}
	sent := fake.Sent(outGeneral)
	for i, m := range sent {
		if m.Content != Render(chunks[i]) || utf8.RuneCountInString(m.Content) > MessageLimit {
			t.Errorf("message %d = %d characters, want chunk %d rendered", i, utf8.RuneCountInString(m.Content), i)
		}
	}
	if !strings.HasPrefix(sent[0].Content, "**Plan**") || !strings.HasSuffix(sent[len(sent)-1].Content, "**Done**") {
		t.Errorf("headings past ### not rendered bold: first %q, last ends %q", sent[0].Content, sent[len(sent)-1].Content[max(0, len(sent[len(sent)-1].Content)-20):])
	}

	long := strings.Repeat("é", 2500)
	id, err := c.Send(context.Background(), pipeline.Delivery{Session: outSession(outGeneral), IdempotencyKey: "long", Text: long, Total: 1})
	if err != nil {
		t.Fatalf("Send of 2500 characters: %v", err)
	}
	if m, _ := fake.Message(outGeneral, id); utf8.RuneCountInString(m.Content) != MessageLimit || !strings.HasSuffix(m.Content, "…") {
		t.Errorf("a 2500-character text became %d characters, want it cut to %d with …", utf8.RuneCountInString(m.Content), MessageLimit)
	}
}
