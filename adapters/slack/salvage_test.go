package slack

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/pipeline"
)

// logBuffer collects a receiver's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func logTo(r *Receiver, logs *logBuffer) {
	r.logger = slog.New(slog.NewTextHandler(logs, nil))
}

// futureBlock is a block of a type slack-go does not know, whose block_id
// is no string: slack-go refuses it, and with it the whole event.
var futureBlock = []any{
	map[string]any{"type": "rich_text", "block_id": "b1", "elements": []any{}},
	map[string]any{"type": "future_block", "block_id": 7},
}

// strictParseFails asserts that slack-go alone fails on body, so that
// what the test sees delivered is salvage's doing.
func strictParseFails(t *testing.T, body []byte) {
	t.Helper()
	_, err := slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
	require.Error(t, err, "slack-go reads this event whole: it proves nothing of the salvage")
}

func eventIDOf(t *testing.T, body []byte) string {
	t.Helper()
	var env struct {
		EventID string `json:"event_id"`
	}
	require.NoError(t, json.Unmarshal(body, &env))
	require.NotEmpty(t, env.EventID)
	return env.EventID
}

// A signed event slack-go cannot read whole still reaches the session
// when the fields replyflow reads are readable, and is logged without its
// text; one whose own fields are broken is acked and dropped as before.
func TestEventsSalvageAnEventSlackGoCannotRead(t *testing.T) {
	fake := startFake(t)
	const ts, text = "1700000002.000200", "the words nobody may lose"
	message := func(extra map[string]any) slacktest.Event {
		e := slacktest.Event{"type": "message", "channel": "C1", "channel_type": "channel", "user": "U1",
			"text": text, "ts": ts, "event_ts": ts, "client_msg_id": "m1"}
		for k, v := range extra {
			e[k] = v
		}
		return e
	}
	pdf := map[string]any{"id": "F1", "name": "a.pdf", "mimetype": "application/pdf", "created": 1700000001}
	cases := []struct {
		name  string
		event slacktest.Event
		// want is the Inbound's MessageID, nil media and mention aside;
		// "" when the event must be dropped.
		want         string
		mentions     bool
		media        []string // the Refs of the Inbound's media
		filesLeftOut bool
	}{
		{name: "a block of a type slack-go does not know, in a shape it refuses",
			event: message(map[string]any{"blocks": futureBlock}), want: ts},
		{name: "an app_mention with that block",
			event: slacktest.Event{"type": "app_mention", "channel": "C1", "user": "U1", "text": "<@" + fake.BotUserID + "> " + text,
				"ts": ts, "event_ts": ts, "blocks": futureBlock},
			want: ts, mentions: true},
		{name: "a number where slack-go wants a string, in a field replyflow does not read",
			event: message(map[string]any{"event_ts": 1700000002.0002}), want: ts},
		{name: "an edit time that is a number",
			event: message(map[string]any{"edited": map[string]any{"user": "U1", "ts": 1700000009}}), want: ts},
		{name: "a file with a field slack-go cannot read, outside what replyflow reads",
			event: message(map[string]any{"subtype": "file_share", "files": []any{
				map[string]any{"id": "F1", "name": "a.pdf", "mimetype": "application/pdf", "created": "yesterday"}}}),
			want: ts, media: []string{"F1"}},
		{name: "a file whose id is no string: that file is left out, the others kept",
			event: message(map[string]any{"subtype": "file_share", "files": []any{pdf, map[string]any{"id": 9, "name": "b.pdf"}}}),
			want:  ts, media: []string{"F1"}, filesLeftOut: true},
		{name: "files that are no array: left out, the text kept",
			event: message(map[string]any{"subtype": "file_share", "files": map[string]any{"id": "F1"}}),
			want:  ts, filesLeftOut: true},
		{name: "a ts that is an object: dropped",
			event: message(map[string]any{"ts": map[string]any{"s": 1}, "blocks": futureBlock})},
		{name: "a text that is a number: dropped",
			event: message(map[string]any{"text": 42})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			to, logs := newSink(), &logBuffer{}
			r := newTestReceiverFor(t, fake, to)
			logTo(r, logs)
			srv := httptest.NewServer(r.EventsHandler(fake.SigningSecret, nil))
			t.Cleanup(srv.Close)

			body := fake.EventCallback(c.event)
			strictParseFails(t, body)
			status, _ := do(t, fake.SignedRequest(testContext(t), srv.URL, "application/json", body, slacktest.Redelivery{}))
			require.Equal(t, http.StatusOK, status, "whatever slack-go makes of it, the event is acked")

			_, accepted, _ := to.snapshot()
			out := logs.String()
			assert.NotContains(t, out, text, "the log never carries the message")
			if c.want == "" {
				assert.Empty(t, accepted)
				assert.Contains(t, out, "Slack event not understood")
				assert.Contains(t, out, "read again with only the fields replyflow uses")
				return
			}
			require.Len(t, accepted, 1, out)
			in := accepted[0]
			assert.Equal(t, pipeline.SessionKey{Channel: Channel, Account: fake.TeamID, Chat: "C1"}, in.Session())
			assert.Equal(t, c.want, in.MessageID)
			assert.Equal(t, "U1", in.SenderID)
			assert.Equal(t, text, in.Text)
			assert.Equal(t, c.mentions, in.MentionsBot)
			var refs []string
			for _, m := range in.Media {
				refs = append(refs, m.Ref)
			}
			assert.Equal(t, c.media, refs)

			assert.Contains(t, out, "level=WARN")
			assert.Contains(t, out, "Slack event read without the fields slack-go could not read")
			assert.Contains(t, out, "type="+c.event["type"].(string))
			assert.Contains(t, out, "event_id="+eventIDOf(t, body))
			assert.Contains(t, out, "EventsAPI Error parsing inner event", "slack-go's own error")
			assert.Contains(t, out, "files_left_out="+map[bool]string{true: "true", false: "false"}[c.filesLeftOut])
			assert.Equal(t, c.filesLeftOut, strings.Contains(out, "without the files it could not read"))
		})
	}
}

// A reaction slack-go cannot read whole still becomes feedback.
func TestEventsSalvageAReaction(t *testing.T) {
	fake, to := startFake(t), newSink()
	events, _ := serveEvents(t, fake, to, nil)
	e := slacktest.ReactionAdded("U1", "thumbsup", "C1", "1.000001")
	e["item_user"] = 5
	body := fake.EventCallback(e)
	strictParseFails(t, body)
	status, _ := do(t, fake.SignedRequest(testContext(t), events, "application/json", body, slacktest.Redelivery{}))
	require.Equal(t, http.StatusOK, status)
	_, _, feedback := to.snapshot()
	require.Len(t, feedback, 1)
	assert.Equal(t, []string{":thumbsup:"}, feedback[0].Emoji)
	assert.Equal(t, "1.000001", feedback[0].MessageID)
	assert.Equal(t, eventIDOf(t, body), feedback[0].EventID)
}

// salvage keeps every field Normalize reads: an event it reads gives what
// the same event without the unreadable field gives.
func TestSalvageKeepsWhatNormalizeReads(t *testing.T) {
	// Each event is a template: %[1]s is where a field slack-go cannot
	// read goes, bad is that field.
	const blocks = `,"blocks":[{"type":"future_block","block_id":7}]`
	cases := []struct{ name, eventID, event, bad string }{
		{"thread reply in the bot's thread, with a mention of the bot and of another", "Ev1",
			`{"type":"message","channel":"C1","channel_type":"channel","user":"U1","text":"<@UBOT> hi <@U2>","ts":"` + postTS + `","thread_ts":"` + parentTS + `","parent_user_id":"UBOT"%[1]s}`, blocks},
		{"another bot's message", "Ev1",
			`{"type":"message","subtype":"bot_message","channel":"C1","channel_type":"channel","bot_id":"B2","username":"deploy bot","text":"done","ts":"` + postTS + `"%[1]s}`, blocks},
		{"a housekeeping message", "Ev1",
			`{"type":"message","subtype":"channel_topic","channel":"C1","channel_type":"channel","user":"U1","text":"set the topic","ts":"` + postTS + `"%[1]s}`, blocks},
		{"a DM whose ID does not tell it is one", "Ev1",
			`{"type":"message","channel":"G1","channel_type":"im","user":"U1","text":"hi","ts":"` + postTS + `"%[1]s}`, blocks},
		{"a DM with files, an audio clip among them", "Ev1",
			`{"type":"message","subtype":"file_share","channel":"D1","channel_type":"im","user":"U1","text":"","ts":"` + postTS + `","files":[{"id":"F1","name":"clip.webm","mimetype":"video/webm","media_display_type":"audio","size":10},{"id":"F2","name":"a.pdf","mimetype":"application/pdf"}]%[1]s}`, blocks},
		{"an edit, with the unreadable field in the message and the previous one too", "Ev1",
			`{"type":"message","subtype":"message_changed","channel":"C1","channel_type":"channel","message":{"user":"U1","text":"new","ts":"` + postTS + `","thread_ts":"` + parentTS + `","parent_user_id":"UBOT"%[1]s},"previous_message":{"text":"old","ts":"` + postTS + `"%[1]s},"ts":"1700000009.000100"%[1]s}`, blocks},
		{"an edit by another bot", "Ev1",
			`{"type":"message","subtype":"message_changed","channel":"C1","channel_type":"channel","message":{"bot_id":"B2","username":"deploy bot","text":"new","ts":"` + postTS + `"%[1]s},"previous_message":{"text":"old"},"ts":"1700000009.000100"%[1]s}`, blocks},
		{"an unfurl, no edit", "Ev1",
			`{"type":"message","subtype":"message_changed","channel":"C1","channel_type":"channel","message":{"user":"U1","text":"same","ts":"` + postTS + `"},"previous_message":{"text":"same"},"ts":"1700000009.000100"%[1]s}`, blocks},
		{"an edit of a file's message", "Ev1",
			`{"type":"message","subtype":"message_changed","channel":"C1","channel_type":"channel","message":{"user":"U1","text":"new","ts":"` + postTS + `","files":[{"id":"F1","name":"a.pdf","mimetype":"application/pdf"}]%[1]s},"previous_message":{"text":"old"},"ts":"1700000009.000100"%[1]s}`, blocks},
		{"an app_mention in a DM, in a thread, with a file", "Ev1",
			`{"type":"app_mention","channel":"D1","user":"U1","text":"<@UBOT> look","ts":"` + postTS + `","thread_ts":"` + parentTS + `","files":[{"id":"F1","name":"a.png","mimetype":"image/png"}]%[1]s}`, blocks},
		{"an app_mention by another bot", "Ev1",
			`{"type":"app_mention","channel":"C1","user":"U2","bot_id":"B2","text":"<@UBOT> deployed","ts":"` + postTS + `"%[1]s}`, blocks},
		{"the bot's own message", "Ev1",
			`{"type":"message","channel":"C1","channel_type":"channel","user":"U9","bot_id":"BBOT","text":"mine","ts":"` + postTS + `"%[1]s}`, blocks},
		{"a reaction", "Ev1",
			`{"type":"reaction_added","user":"U1","reaction":"thumbsup","item":{"type":"message","channel":"C1","ts":"` + postTS + `"%[1]s},"event_ts":"1700000010.000100"%[1]s}`, `,"item_user":5,"file":5`},
		{"a reaction in an envelope without an event_id", "",
			`{"type":"reaction_added","user":"U1","reaction":"thumbsup","item":{"type":"message","channel":"C1","ts":"` + postTS + `"},"event_ts":"1700000010.000100"%[1]s}`, `,"item_user":5`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := envelope(c.eventID, strings.ReplaceAll(c.event, "%[1]s", c.bad))
			strictParseFails(t, body)
			ev, salvaged, err := parse(body)
			require.NoError(t, err)
			require.NotNil(t, salvaged)
			assert.False(t, salvaged.FilesLeftOut)
			got := Normalize(testBot, ReplyThreaded, ev, testNow)

			whole := envelope(c.eventID, strings.ReplaceAll(c.event, "%[1]s", ""))
			want := normalize(t, ReplyThreaded, whole)
			_, salvaged, err = parse(whole)
			require.NoError(t, err)
			require.Nil(t, salvaged, "slack-go reads the event without the field")
			assert.Equal(t, want, got)
		})
	}
}

// An event slack-go reads whole is not salvaged, and salvage leaves what
// Normalize does not handle (or a body that is no event) to fail as it did.
func TestSalvageOnlyWhatSlackGoFailsOnAndNormalizeHandles(t *testing.T) {
	_, salvaged, err := parse(envelope("Ev1", `{"type":"message","channel":"C1","user":"U1","text":"hi","ts":"1.1"}`))
	require.NoError(t, err)
	assert.Nil(t, salvaged)

	for _, body := range []string{
		string(envelope("Ev1", `{"type":"member_joined_channel","user":5,"channel":"C1"}`)),
		string(envelope("Ev1", `{"type":"message","channel":"C1","user":"U1","text":"hi","ts":7,"blocks":[{"type":"x","block_id":7}]}`)),
		string(envelope("Ev1", `{"type":"message","subtype":"message_changed","channel":"C1","message":"not an object"}`)),
		string(envelope("Ev1", `"not an object"`)),
		`{"type":"app_rate_limited","team_id":7}`,
		`{"type":"event_callback","team_id":7,"event":{"type":"message","channel":"C1","user":"U1","text":"hi","ts":"1.1"}}`,
	} {
		_, salvaged, err := parse([]byte(body))
		assert.ErrorContains(t, err, "not a Slack Events API payload", body)
		assert.Nil(t, salvaged, body)
	}
}

// salvageMessage keeps every field the catch-up reads of a message of
// history: a message it reads gives the event the same message without
// the unreadable field gives.
func TestSalvageMessageKeepsWhatCatchupReads(t *testing.T) {
	const blocks = `,"blocks":[{"type":"future_block","block_id":7}]`
	cases := []struct {
		name, message, bad string
		direct             bool
	}{
		{"a thread reply in the bot's thread, with a mention of the bot and of another",
			`{"type":"message","user":"U1","text":"<@UBOT> hi <@U2>","ts":"` + postTS + `","thread_ts":"` + parentTS + `","parent_user_id":"UBOT"%[1]s}`, blocks, false},
		{"another bot's message",
			`{"type":"message","subtype":"bot_message","bot_id":"B2","username":"deploy bot","text":"done","ts":"` + postTS + `"%[1]s}`, blocks, false},
		{"a housekeeping message",
			`{"type":"message","subtype":"channel_join","user":"U1","text":"joined","ts":"` + postTS + `"%[1]s}`, blocks, false},
		{"a DM with files, an audio clip among them",
			`{"type":"message","subtype":"file_share","user":"U1","text":"","ts":"` + postTS + `","files":[{"id":"F1","name":"clip.webm","mimetype":"video/webm","media_display_type":"audio","size":10%[1]s},{"id":"F2","name":"a.pdf","mimetype":"application/pdf"}]%[1]s}`, `,"created":"yesterday"`, true},
		{"a reply also sent to the channel, its root unreadable too",
			`{"type":"message","subtype":"thread_broadcast","user":"U1","text":"also here","ts":"` + postTS + `","thread_ts":"` + parentTS + `","root":{"user":"U2","text":"parent","ts":"` + parentTS + `"%[1]s}%[1]s}`, blocks, false},
		{"an edited message whose edit time is a number",
			`{"type":"message","user":"U1","text":"fixed","ts":"` + postTS + `"%[1]s}`, `,"edited":{"user":"U1","ts":1700000009}`, false},
		{"the bot's own message",
			`{"type":"message","user":"U9","bot_id":"BBOT","text":"mine","ts":"` + postTS + `"%[1]s}`, blocks, false},
	}
	r, err := NewReceiver(ReceiverConfig{Bot: testBot, Sink: newSink(), Now: func() time.Time { return testNow }})
	require.NoError(t, err)
	c := &catchup{r: r}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conv := conversation{channel: "C1", team: "T1", direct: tc.direct}
			raw := json.RawMessage(strings.ReplaceAll(tc.message, "%[1]s", tc.bad))
			require.Error(t, json.Unmarshal(raw, new(slack.Message)), "slack-go reads the message whole: it proves nothing of the salvage")
			m, salvaged, err := decodeMessage(raw)
			require.NoError(t, err)
			require.NotNil(t, salvaged)
			assert.Equal(t, "message", salvaged.Type)
			assert.False(t, salvaged.FilesLeftOut)
			got := c.event(conv, m)

			whole, salvaged, err := decodeMessage(json.RawMessage(strings.ReplaceAll(tc.message, "%[1]s", "")))
			require.NoError(t, err)
			require.Nil(t, salvaged, "slack-go reads the message without the field")
			assert.Equal(t, c.event(conv, whole), got)
		})
	}
}

// A message of history whose own fields are broken is not read: the
// catch-up skips it with slack-go's error and salvage's.
func TestSalvageMessageOfHistoryWithBrokenFieldsFails(t *testing.T) {
	for _, raw := range []string{
		`{"type":"message","user":"U1","text":"hi","ts":{"s":1},"blocks":[{"type":"x","block_id":7}]}`,
		`{"type":"message","user":"U1","text":42,"ts":"1.1"}`,
		`"not an object"`,
	} {
		_, salvaged, err := decodeMessage(json.RawMessage(raw))
		assert.Error(t, err, raw)
		assert.Nil(t, salvaged, raw)
	}
}
