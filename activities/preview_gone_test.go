package activities

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/discord"
	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/adapters/slack"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/adapters/telegram"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/pipeline"
)

// aChat is one platform's fake with the adapter the worker would use:
// what the reply's delivery sees of a chat.
type aChat struct {
	key pipeline.SessionKey
	out adapters.Outbound
	// remove deletes a message as a user or an admin would.
	remove func(id string)
	// bot is the texts of the bot's messages in the chat, oldest first.
	bot func() []string
}

func telegramChat(t *testing.T) aChat {
	fake := telegramtest.New("1000:secret")
	t.Cleanup(fake.Close)
	c, err := telegram.NewClient(telegram.ClientConfig{Token: "1000:secret", APIURL: fake.URL()})
	require.NoError(t, err)
	chat := telegramtest.Private(42)
	fake.AddMessage(telegramtest.Incoming{Chat: chat, From: telegramtest.User{ID: 42, FirstName: "Alice"}, Text: "hi"})
	return aChat{
		key: pipeline.SessionKey{Channel: telegram.Channel, Account: "1000", Chat: "42"},
		out: c,
		remove: func(id string) {
			n, _ := strconv.Atoi(id)
			fake.Delete(chat.ID, n)
		},
		bot: func() (texts []string) {
			for _, m := range fake.Sent(chat.ID) {
				texts = append(texts, m.Text)
			}
			return texts
		},
	}
}

func slackChat(t *testing.T) aChat {
	fake := slacktest.New(slacktest.Options{})
	t.Cleanup(fake.Close)
	fake.AddChannel(slacktest.Channel{ID: "D1", Members: 2})
	c, err := slack.NewClient(slack.ClientConfig{Token: fake.BotToken, APIURL: fake.APIURL(), PostInterval: -1})
	require.NoError(t, err)
	return aChat{
		key:    pipeline.SessionKey{Channel: slack.Channel, Account: fake.TeamID, Chat: "D1"},
		out:    c,
		remove: func(ts string) { fake.Delete("D1", ts) },
		bot: func() (texts []string) {
			for _, m := range fake.Sent("D1") {
				texts = append(texts, m.Text)
			}
			return texts
		},
	}
}

func discordChat(t *testing.T) aChat {
	const channel = "100000000000000300"
	fake := discordtest.New(discordtest.Options{})
	t.Cleanup(fake.Close)
	fake.AddUser(discordtest.User{ID: "100000000000000500", Name: "ada"})
	fake.AddChannel(discordtest.Channel{ID: channel, Type: discordtest.DM, Recipient: "100000000000000500"})
	c, err := discord.NewClient(discord.ClientConfig{Token: fake.Token, APIURL: fake.APIURL()})
	require.NoError(t, err)
	return aChat{
		key:    pipeline.SessionKey{Channel: discord.Channel, Account: "900000000000000001", Chat: channel},
		out:    c,
		remove: func(id string) { fake.Delete(channel, id) },
		bot: func() (texts []string) {
			for _, m := range fake.Sent(channel) {
				if !m.Deleted {
					texts = append(texts, m.Content)
				}
			}
			return texts
		},
	}
}

// A preview deleted while the answer was written: the reply's first
// chunk, which was to edit it, goes out as a new message under its own
// idempotency key, the ledger records that message, and a retry of the
// delivery sends nothing again.
func TestAReplyOverADeletedPreviewIsSentAsANewMessageOnce(t *testing.T) {
	for name, open := range map[string]func(*testing.T) aChat{"telegram": telegramChat, "slack": slackChat, "discord": discordChat} {
		t.Run(name, func(t *testing.T) {
			chat := open(t)
			ctx := context.Background()
			db, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
			require.NoError(t, err)
			defer db.Close()
			acts := &Activities{Store: db, Outbound: map[string]adapters.Outbound{chat.key.Channel: chat.out}, Logger: slog.Default()}

			preview, err := chat.out.Send(ctx, pipeline.Delivery{Session: chat.key, IdempotencyKey: chat.key.WorkflowID() + "/t1/preview", Text: "The answer so", Total: 1})
			require.NoError(t, err)
			chat.remove(preview)
			require.Empty(t, chat.bot(), "the preview is gone")

			d := pipeline.Delivery{Session: chat.key, IdempotencyKey: chat.key.WorkflowID() + "/t1/0", Text: "The answer so far is this.", Total: 1, Replaces: preview}
			got := deliver(t, acts, d)
			assert.NotEqual(t, preview, got.PlatformMessageID, "a new message")
			assert.Equal(t, []string{"The answer so far is this."}, chat.bot())
			recorded, found, err := db.PlatformID(ctx, chat.key.WorkflowID(), d.IdempotencyKey)
			require.NoError(t, err)
			assert.True(t, found, "the chunk that replaced the preview is in the ledger")
			assert.Equal(t, got.PlatformMessageID, recorded)

			again := deliver(t, acts, d)
			assert.Equal(t, got.PlatformMessageID, again.PlatformMessageID)
			assert.Equal(t, []string{"The answer so far is this."}, chat.bot(), "sent once")
		})
	}
}

func deliver(t *testing.T, acts *Activities, d pipeline.Delivery) pipeline.Delivered {
	t.Helper()
	v, err := newActivityEnv(acts).ExecuteActivity(acts.Deliver, d)
	require.NoError(t, err, "the delivery does not fail (the turn would park)")
	var got pipeline.Delivered
	require.NoError(t, v.Get(&got))
	return got
}

// refusingEdits refuses every edit the same way.
type refusingEdits struct {
	fakeOutbound
	err error
}

func (r *refusingEdits) Edit(context.Context, pipeline.Edit) error { return r.err }

// Only a preview that is gone is replaced by a new message: an edit
// refused for another reason fails the delivery as before, and nothing
// is posted beside the preview.
func TestAPreviewRefusedForAnotherReasonIsNotPostedAgain(t *testing.T) {
	out := &refusingEdits{err: &adapters.Error{Kind: adapters.Permanent, Op: "edit", Err: errors.New("message can't be edited")}}
	acts := &Activities{Outbound: map[string]adapters.Outbound{"webchat": out}, Logger: slog.Default()}
	_, err := newActivityEnv(acts).ExecuteActivity(acts.Deliver, pipeline.Delivery{Session: session, IdempotencyKey: "k/0", Text: "x", Total: 1, Replaces: "p-1"})
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.Equal(t, "PlatformRejected", app.Type())
	assert.Empty(t, out.sent)

	out.err = adapters.Gone(&adapters.Error{Kind: adapters.Permanent, Op: "edit", Err: errors.New("message to edit not found")})
	v, err := newActivityEnv(acts).ExecuteActivity(acts.Deliver, pipeline.Delivery{Session: session, IdempotencyKey: "k/0", Text: "x", Total: 1, Replaces: "p-1"})
	require.NoError(t, err)
	var got pipeline.Delivered
	require.NoError(t, v.Get(&got))
	assert.Equal(t, "p-1", got.PlatformMessageID, "the new message (fakeOutbound's IDs are p-1)")
	require.Len(t, out.sent, 1)
	assert.Equal(t, "k/0", out.sent[0].IdempotencyKey, "under the chunk's own key")
}

// goneAfterFirstEdit is a screen whose preview is deleted once it is
// shown: every edit of it is refused as gone.
type goneAfterFirstEdit struct {
	screen
	tries int
}

func (g *goneAfterFirstEdit) Edit(context.Context, pipeline.Edit) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tries++
	return adapters.Gone(&adapters.Error{Kind: adapters.Permanent, Op: "edit", Err: errors.New("message to edit not found")})
}

// A preview deleted mid-stream is not edited again at every tick: the
// stream stops previewing, and the final delivery sends the answer.
func TestAPreviewDeletedMidStreamIsNotEditedAgain(t *testing.T) {
	out := &goneAfterFirstEdit{}
	acts := streamingActs(out, &writer{words: words(40, "word"), pace: 10 * time.Millisecond}, pipeline.StreamPreview)
	r, err := turnResult(t, acts, streamReq)
	require.NoError(t, err)
	require.Len(t, out.posted, 1, "the preview")
	assert.Equal(t, 1, out.tries, "one refused edit, then no more")
	require.NotNil(t, r.Shown)
	assert.Equal(t, "msg-1", r.Shown.PreviewID, "the delivery learns of the preview, and finds it gone")
}
