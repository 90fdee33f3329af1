package slack

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

var (
	testBot = Identity{UserID: "UBOT", BotID: "BBOT"}
	// testNow is a second after postTS: the posts arrive live.
	testNow = time.Unix(1700000003, 0).UTC()
)

const (
	postTS   = "1700000002.000200"
	parentTS = "1700000001.000100"
)

// envelope wraps an inner event as Slack's event_callback does.
func envelope(eventID, inner string) []byte {
	return []byte(fmt.Sprintf(`{"token":"x","team_id":"T1","api_app_id":"A1","type":"event_callback","event_id":%q,"event_time":1700000002,"event":%s}`, eventID, inner))
}

func normalize(t *testing.T, mode ReplyMode, body []byte) Event {
	t.Helper()
	ev, err := Parse(body)
	require.NoError(t, err)
	return Normalize(testBot, mode, ev, testNow)
}

func TestNormalizeMessages(t *testing.T) {
	base := pipeline.Inbound{
		Channel: Channel, Account: "T1", ChatID: "C1", ChatType: pipeline.ChatGroup,
		MessageID: postTS, SenderID: "U1", Text: "hello", ThreadID: postTS, ReceivedAt: testNow,
	}
	with := func(change func(*pipeline.Inbound)) *pipeline.Inbound {
		in := base
		change(&in)
		return &in
	}
	cases := []struct {
		name  string
		mode  ReplyMode
		event string
		want  *pipeline.Inbound
	}{
		{"channel message starts a thread", ReplyThreaded,
			`{"type":"message","channel":"C1","channel_type":"channel","user":"U1","text":"hello","ts":"` + postTS + `"}`,
			&base},
		{"thread reply in a thread the bot started", ReplyThreaded,
			`{"type":"message","channel":"C1","channel_type":"channel","user":"U1","text":"hello","ts":"` + postTS + `","thread_ts":"` + parentTS + `","parent_user_id":"UBOT"}`,
			with(func(in *pipeline.Inbound) { in.ThreadID, in.ReplyTo, in.ReplyToBot = parentTS, parentTS, true })},
		{"thread reply in someone's thread", ReplyThreaded,
			`{"type":"message","channel":"C1","channel_type":"channel","user":"U1","text":"hello","ts":"` + postTS + `","thread_ts":"` + parentTS + `","parent_user_id":"U2"}`,
			with(func(in *pipeline.Inbound) { in.ThreadID, in.ReplyTo = parentTS, parentTS })},
		{"DM top-level answered top-level", ReplyThreaded,
			`{"type":"message","channel":"D1","channel_type":"im","user":"U1","text":"hello","ts":"` + postTS + `"}`,
			with(func(in *pipeline.Inbound) { in.ChatID, in.ChatType, in.ThreadID = "D1", pipeline.ChatDirect, "" })},
		{"DM top-level, always threaded", ReplyAlways,
			`{"type":"message","channel":"D1","channel_type":"im","user":"U1","text":"hello","ts":"` + postTS + `"}`,
			with(func(in *pipeline.Inbound) { in.ChatID, in.ChatType = "D1", pipeline.ChatDirect })},
		{"app_mention in a DM: the D of the ID makes it direct", ReplyThreaded,
			`{"type":"app_mention","channel":"D1","user":"U1","text":"<@UBOT> hello","ts":"` + postTS + `"}`,
			with(func(in *pipeline.Inbound) {
				in.ChatID, in.ChatType, in.ThreadID, in.MentionsBot = "D1", pipeline.ChatDirect, "", true
			})},
		{"group DM threads like a channel", ReplyThreaded,
			`{"type":"message","channel":"G1","channel_type":"mpim","user":"U1","text":"hello","ts":"` + postTS + `"}`,
			with(func(in *pipeline.Inbound) { in.ChatID = "G1" })},
		{"bot mention stripped before commands", ReplyThreaded,
			`{"type":"message","channel":"C1","channel_type":"channel","user":"U1","text":"<@UBOT> /status","ts":"` + postTS + `"}`,
			with(func(in *pipeline.Inbound) { in.Text, in.MentionsBot = "/status", true })},
		{"labelled bot mention mid-text", ReplyThreaded,
			`{"type":"message","channel":"C1","channel_type":"channel","user":"U1","text":"hey <@UBOT|replyflow> help <@U2>","ts":"` + postTS + `"}`,
			with(func(in *pipeline.Inbound) { in.Text, in.MentionsBot = "hey help <@U2>", true })},
		{"others mentioned", ReplyThreaded,
			`{"type":"message","channel":"C1","channel_type":"channel","user":"U1","text":"<@U2> look","ts":"` + postTS + `"}`,
			with(func(in *pipeline.Inbound) { in.Text, in.MentionsOthers = "<@U2> look", true })},
		{"escapes decoded", ReplyThreaded,
			`{"type":"message","channel":"C1","channel_type":"channel","user":"U1","text":"a &lt; b &amp;&amp; c &gt; d &amp;lt;","ts":"` + postTS + `"}`,
			with(func(in *pipeline.Inbound) { in.Text = "a < b && c > d &lt;" })},
		{"another bot's message", ReplyThreaded,
			`{"type":"message","subtype":"bot_message","channel":"C1","channel_type":"channel","bot_id":"B2","username":"CI","text":"hello","ts":"` + postTS + `"}`,
			with(func(in *pipeline.Inbound) { in.SenderID, in.SenderName, in.SenderIsBot = "B2", "CI", true })},
		{"thread broadcast", ReplyThreaded,
			`{"type":"message","subtype":"thread_broadcast","channel":"C1","channel_type":"channel","user":"U1","text":"hello","ts":"` + postTS + `","thread_ts":"` + parentTS + `"}`,
			with(func(in *pipeline.Inbound) { in.ThreadID, in.ReplyTo = parentTS, parentTS })},
		{"file share as references", ReplyThreaded,
			`{"type":"message","subtype":"file_share","channel":"C1","channel_type":"channel","user":"U1","text":"","ts":"` + postTS + `","files":[{"id":"F1","name":"plan.pdf","mimetype":"application/pdf"},{"id":"F2","name":"cat.png","mimetype":"image/png"}]}`,
			with(func(in *pipeline.Inbound) {
				in.Text = ""
				in.Media = []pipeline.Media{
					{Kind: "document", Ref: "F1", MimeType: "application/pdf", Name: "plan.pdf"},
					{Kind: "photo", Ref: "F2", MimeType: "image/png", Name: "cat.png"},
				}
			})},
		{"edit keeps the original ts", ReplyThreaded,
			`{"type":"message","subtype":"message_changed","channel":"C1","channel_type":"channel","ts":"1700000009.000900",
			  "message":{"type":"message","user":"U1","text":"hello","ts":"` + postTS + `","edited":{"user":"U1","ts":"1700000009.000900"}},
			  "previous_message":{"type":"message","user":"U1","text":"helo","ts":"` + postTS + `"}}`,
			&base},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := normalize(t, c.mode, envelope("Ev1", c.event))
			require.Empty(t, got.Skip)
			require.NotNil(t, got.Inbound)
			assert.Equal(t, *c.want, *got.Inbound)
			assert.NoError(t, got.Inbound.Validate())
		})
	}
}

func TestNormalizeSkips(t *testing.T) {
	msg := func(extra string) string {
		return `{"type":"message","channel":"C1","channel_type":"channel","ts":"` + postTS + `",` + extra + `}`
	}
	cases := []struct{ name, event, reason string }{
		{"own message by user", msg(`"user":"UBOT","text":"hi"`), "own message"},
		{"own message by bot_id", msg(`"subtype":"bot_message","bot_id":"BBOT","text":"hi"`), "own message"},
		{"own app_mention", `{"type":"app_mention","channel":"C1","user":"UBOT","text":"<@UBOT> hi","ts":"` + postTS + `"}`, "own message"},
		{"join", msg(`"subtype":"channel_join","user":"U1","text":"<@U1> has joined the channel"`), "housekeeping message (channel_join)"},
		{"topic", msg(`"subtype":"channel_topic","user":"U1","text":"set the topic"`), "housekeeping message (channel_topic)"},
		{"purpose", msg(`"subtype":"channel_purpose","user":"U1","text":"set the purpose"`), "housekeeping message (channel_purpose)"},
		{"private channel join", msg(`"subtype":"group_join","user":"U1","text":"joined"`), "housekeeping"},
		{"deletion", `{"type":"message","subtype":"message_deleted","channel":"C1","channel_type":"channel","ts":"1700000009.000900","deleted_ts":"` + postTS + `","previous_message":{"type":"message","user":"U1","text":"hi","ts":"` + postTS + `"}}`, "message deleted"},
		{"unfurl is no edit", `{"type":"message","subtype":"message_changed","channel":"C1","channel_type":"channel","ts":"1700000009.000900","message":{"type":"message","user":"U1","text":"see https://x.y","ts":"` + postTS + `","attachments":[{"title":"x"}]},"previous_message":{"type":"message","user":"U1","text":"see https://x.y","ts":"` + postTS + `"}}`, "without an edit"},
		{"only a mention", msg(`"user":"U1","text":"<@UBOT>"`), "without text or files"},
		{"no sender", msg(`"text":"hi"`), "without a sender"},
		{"bad channel ID", `{"type":"message","channel":"C 1","channel_type":"channel","user":"U1","text":"hi","ts":"` + postTS + `"}`, "invalid message: chat contains"},
		{"other event type", `{"type":"member_joined_channel","user":"U1","channel":"C1"}`, "event type not handled"},
		{"reaction on a file", `{"type":"reaction_added","user":"U1","reaction":"x","item":{"type":"file"},"event_ts":"1"}`, "not a message"},
		{"own reaction", `{"type":"reaction_added","user":"UBOT","reaction":"eyes","item":{"type":"message","channel":"C1","ts":"` + postTS + `"},"event_ts":"1"}`, "own reaction"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := normalize(t, ReplyThreaded, envelope("Ev1", c.event))
			assert.Nil(t, got.Inbound)
			assert.Nil(t, got.Feedback)
			assert.Contains(t, got.Skip, c.reason)
		})
	}
}

func TestNormalizeURLVerificationIsNoEvent(t *testing.T) {
	got := normalize(t, ReplyThreaded, []byte(`{"token":"x","challenge":"abc","type":"url_verification"}`))
	assert.Contains(t, got.Skip, "not an event_callback")
}

func TestParseRefusesGarbage(t *testing.T) {
	_, err := Parse([]byte(`{"type":`))
	assert.ErrorContains(t, err, "not a Slack Events API payload")
}

func TestNormalizeReaction(t *testing.T) {
	got := normalize(t, ReplyThreaded, envelope("Ev9",
		`{"type":"reaction_added","user":"U1","reaction":"thumbsup","item_user":"UBOT","item":{"type":"message","channel":"C1","ts":"`+postTS+`"},"event_ts":"1700000010.000100"}`))
	require.NotNil(t, got.Feedback, got.Skip)
	assert.Equal(t, pipeline.Feedback{
		Channel: Channel, Account: "T1", ChatID: "C1", EventID: "Ev9", MessageID: postTS,
		SenderID: "U1", Emoji: []string{":thumbsup:"}, At: testNow,
	}, *got.Feedback)
}

// Slack sends one channel post that mentions the bot twice, as message
// and as app_mention, and redelivers either on a retry: every copy must
// become the same Inbound, mention included, whichever arrives first.
func TestTwinsAndRetriesAreOneInbound(t *testing.T) {
	message := `{"type":"message","channel":"C1","channel_type":"channel","user":"U1","text":"<@UBOT> hi","ts":"` + postTS + `","event_ts":"` + postTS + `"}`
	mention := `{"type":"app_mention","channel":"C1","user":"U1","text":"<@UBOT> hi","ts":"` + postTS + `","event_ts":"` + postTS + `"}`
	var seen []pipeline.Inbound
	for _, body := range [][]byte{envelope("Ev1", message), envelope("Ev2", mention), envelope("Ev1", message), envelope("Ev2", mention)} {
		got := normalize(t, ReplyThreaded, body)
		require.NotNil(t, got.Inbound, got.Skip)
		seen = append(seen, *got.Inbound)
	}
	for _, in := range seen[1:] {
		assert.Equal(t, seen[0], in)
	}
	assert.True(t, seen[0].MentionsBot)
	assert.Equal(t, "hi", seen[0].Text)
}

func TestMergeTwinsKeepsTheMention(t *testing.T) {
	plain := pipeline.Inbound{Channel: Channel, Account: "T1", ChatID: "C1", MessageID: postTS, SenderID: "U1", Text: "hi", MentionsOthers: true}
	mentioned := plain
	mentioned.MentionsBot, mentioned.MentionsOthers = true, false
	for _, pair := range [][2]pipeline.Inbound{{plain, mentioned}, {mentioned, plain}} {
		got, ok := MergeTwins(pair[0], pair[1])
		require.True(t, ok)
		assert.True(t, got.MentionsBot)
		assert.False(t, got.MentionsOthers)
	}
	other := plain
	other.MessageID = parentTS
	_, ok := MergeTwins(plain, other)
	assert.False(t, ok, "two posts are no twins")
	other = plain
	other.ChatID = "C2"
	_, ok = MergeTwins(plain, other)
	assert.False(t, ok, "one ts in two channels is two posts")
}

func TestNormalizeRespectsLimits(t *testing.T) {
	long := strings.Repeat("é", pipeline.MaxTextBytes)
	files := make([]string, 0, 15)
	for i := range 15 {
		files = append(files, fmt.Sprintf(`{"id":"F%d","name":"%s"}`, i, strings.Repeat("n", 400)))
	}
	got := normalize(t, ReplyThreaded, envelope("Ev1",
		`{"type":"message","subtype":"file_share","channel":"C1","channel_type":"channel","user":"U1","text":"`+long+`","ts":"`+postTS+`","files":[`+strings.Join(files, ",")+`]}`))
	require.NotNil(t, got.Inbound, got.Skip)
	assert.NoError(t, got.Inbound.Validate())
	assert.True(t, strings.HasSuffix(got.Inbound.Text, pipeline.TruncatedMark))
	assert.Len(t, got.Inbound.Media, pipeline.MaxMedia)
	assert.Len(t, got.Inbound.Media[0].Name, pipeline.MaxNameBytes)
}

// A shared file's name loses its control characters (an escaped NUL
// included) and is clipped; a file without an ID is nothing to fetch and
// is left out; a negative size is no concern of the message's.
func TestSharedFilesHostileNamesAreCleaned(t *testing.T) {
	got := normalize(t, ReplyThreaded, envelope("Ev1",
		`{"type":"message","subtype":"file_share","channel":"D1","channel_type":"im","user":"U1","text":"","ts":"`+postTS+`","files":[`+
			`{"name":"no-id.pdf","size":10},`+
			`{"id":"F1","name":"../../etc/passwd\u0000\u001b[31m\r\n.pdf","mimetype":"application/pdf","size":-1}]}`))
	require.NotNil(t, got.Inbound, got.Skip)
	assert.Equal(t, []pipeline.Media{{Kind: "document", Ref: "F1", MimeType: "application/pdf", Name: "../../etc/passwd[31m.pdf"}}, got.Inbound.Media)

	none := normalize(t, ReplyThreaded, envelope("Ev2",
		`{"type":"message","subtype":"file_share","channel":"D1","channel_type":"im","user":"U1","text":"","ts":"`+postTS+`","files":[{"name":"no-id.pdf"}]}`))
	assert.Nil(t, none.Inbound)
	assert.Equal(t, "message without text or files", none.Skip)
}

func FuzzNormalize(f *testing.F) {
	for _, seed := range []string{
		`{"type":"message","channel":"C1","channel_type":"channel","user":"U1","text":"<@UBOT> &lt;hi <@U2|x>","ts":"1.2","thread_ts":"1.1","parent_user_id":"UBOT"}`,
		`{"type":"app_mention","channel":"D1","user":"U1","text":"<@UBOT","ts":"1.2"}`,
		`{"type":"message","subtype":"file_share","channel":"C1","user":"U1","ts":"1.2","files":[{"id":"F1","name":"a"}]}`,
		`{"type":"message","subtype":"message_changed","channel":"C1","message":{"user":"U1","text":"b","ts":"1.2"},"previous_message":{"text":"a"}}`,
		`{"type":"reaction_added","user":"U1","reaction":"x","item":{"type":"message","channel":"C1","ts":"1.2"}}`,
		// slack-go refuses it whole; salvage reads it
		`{"type":"message","channel":"C1","user":"U1","text":"a","ts":"1.2","blocks":[{"type":"x","block_id":7}],"files":[{"id":"F1","size":"x"}]}`,
	} {
		f.Add(string(envelope("Ev1", seed)))
	}
	f.Fuzz(func(t *testing.T, body string) {
		ev, err := Parse([]byte(body))
		if err != nil {
			return
		}
		got := Normalize(testBot, ReplyThreaded, ev, testNow)
		switch {
		case got.Inbound != nil:
			if err := got.Inbound.Validate(); err != nil {
				t.Fatalf("invalid Inbound %+v: %v", got.Inbound, err)
			}
			if strings.Contains(got.Inbound.Text, "<@"+testBot.UserID+">") {
				t.Fatalf("bot mention left in %q", got.Inbound.Text)
			}
		case got.Feedback != nil:
			if err := got.Feedback.Validate(); err != nil {
				t.Fatalf("invalid Feedback %+v: %v", got.Feedback, err)
			}
		case got.Skip == "":
			t.Fatal("an event that is neither message nor feedback needs a reason")
		}
	})
}

// A message the gateway gets well after Slack's ts (redelivered, or
// fetched by the catch-up) carries the ts's time, so that its reply can
// say how late it is; a live one carries the gateway's clock.
func TestNormalizeStampsALateMessageWithItsTS(t *testing.T) {
	posted := time.UnixMicro(1700000002_000200).UTC()
	body := envelope("Ev1", `{"type":"message","channel":"C1","channel_type":"channel","user":"U1","text":"hello","ts":"`+postTS+`"}`)
	ev, err := Parse(body)
	require.NoError(t, err)
	for _, c := range []struct {
		name     string
		now, got time.Time
	}{
		{"live", posted.Add(time.Second), posted.Add(time.Second)},
		{"late by more than adapters.LateAfter", posted.Add(3 * time.Hour), posted},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Normalize(testBot, ReplyThreaded, ev, c.now)
			require.NotNil(t, got.Inbound, got.Skip)
			assert.Equal(t, c.got, got.Inbound.ReceivedAt)
		})
	}
}
