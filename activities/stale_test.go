package activities

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/replyflow/replyflow/pipeline"
)

func TestWithStaleNote(t *testing.T) {
	now := time.Date(2026, 11, 27, 17, 2, 0, 0, time.UTC)
	msg := func(id string, at time.Time) []pipeline.TurnMessage {
		return []pipeline.TurnMessage{
			{MessageID: "1", SenderName: "Bob", Text: "earlier", At: at.Add(-time.Hour)},
			{MessageID: id, SenderName: "Alice", Text: "the question", At: at},
		}
	}
	a := &Activities{StaleAfter: 15 * time.Minute}
	cases := []struct {
		name  string
		a     *Activities
		req   pipeline.TurnRequest
		shown *pipeline.Shown
		reply string
		want  string
	}{
		{"fresh", a, pipeline.TurnRequest{Messages: msg("2", now.Add(-14*time.Minute))}, nil, "Hi.", "Hi."},
		{"late, direct", a, pipeline.TurnRequest{Messages: msg("2", now.Add(-3*time.Hour))}, nil, "Hi.",
			"(replying to your message from 14:02, 3 h ago)\nHi."},
		{"late, group: the sender named", a, pipeline.TurnRequest{Group: true, Messages: msg("2", now.Add(-20*time.Minute))}, nil, "Hi.",
			"(replying to Alice's message from 16:42, 20 min ago)\nHi."},
		{"another day shows its date", a, pipeline.TurnRequest{Messages: msg("2", now.Add(-50*time.Hour))}, nil, "Hi.",
			"(replying to your message from Nov 25, 15:02, 2 days ago)\nHi."},
		{"in the agent's time zone", &Activities{StaleAfter: time.Minute, Location: time.FixedZone("UTC+2", 2*3600)},
			pipeline.TurnRequest{Messages: msg("2", now.Add(-2*time.Minute))}, nil, "Hi.",
			"(replying to your message from 19:00, 2 min ago)\nHi."},
		{"silent stays silent", a, pipeline.TurnRequest{Messages: msg("2", now.Add(-3*time.Hour))}, nil, pipeline.SilentToken, pipeline.SilentToken},
		{"heartbeat", a, pipeline.TurnRequest{Messages: msg("heartbeat/t1", now.Add(-3*time.Hour))}, nil, "All fine.", "All fine."},
		{"blocks already sent", a, pipeline.TurnRequest{Messages: msg("2", now.Add(-3*time.Hour))},
			&pipeline.Shown{Blocks: []string{"B1"}, Text: "Hi."}, "Hi.", "Hi."},
		{"off", &Activities{}, pipeline.TurnRequest{Messages: msg("2", now.Add(-3*time.Hour))}, nil, "Hi.", "Hi."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, c.a.withStaleNote(c.req, c.shown, c.reply, now))
		})
	}
}

// A delivery that may go out long after its turn (retried as an
// activity, parked) says how late it is when it does, once.
func TestWithLateNote(t *testing.T) {
	now := time.Date(2026, 11, 27, 17, 2, 0, 0, time.UTC)
	a := &Activities{StaleAfter: 15 * time.Minute, Settings: pipeline.Settings{ChunkLimit: 80}}
	answers := func(at time.Time) *pipeline.TurnMessage {
		return &pipeline.TurnMessage{MessageID: "2", SenderName: "Alice", At: at}
	}
	key := pipeline.SessionKey{Channel: "telegram", Account: "bot", Chat: "1"}
	late := "(replying to your message from 14:02, 3 h ago)\n"
	cases := []struct {
		name string
		d    pipeline.Delivery
		want string
	}{
		{"parked for hours", pipeline.Delivery{Session: key, Text: "Hi.", Answers: answers(now.Add(-3 * time.Hour))}, late + "Hi."},
		{"in a group, the sender named", pipeline.Delivery{Session: key, Text: "Hi.", Group: true, Answers: answers(now.Add(-20 * time.Minute))},
			"(replying to Alice's message from 16:42, 20 min ago)\nHi."},
		{"retried within the bound", pipeline.Delivery{Session: key, Text: "Hi.", Answers: answers(now.Add(-14 * time.Minute))}, "Hi."},
		{"the turn was late already", pipeline.Delivery{Session: key, Text: late + "Hi.", Answers: answers(now.Add(-3 * time.Hour))}, late + "Hi."},
		{"a fast delivery carries nothing to answer", pipeline.Delivery{Session: key, Text: "Hi."}, "Hi."},
		{"a heartbeat's", pipeline.Delivery{Session: key, Text: "Hi.", Answers: &pipeline.TurnMessage{MessageID: "heartbeat/t1", At: now.Add(-3 * time.Hour)}}, "Hi."},
		{"a chunk the line would push past the limit goes as it is",
			pipeline.Delivery{Session: key, Text: strings.Repeat("x", 70), Answers: answers(now.Add(-3 * time.Hour))}, strings.Repeat("x", 70)},
		{"a whole reply is cut after the line is added",
			pipeline.Delivery{Session: key, Text: strings.Repeat("x", 70), Whole: true, Answers: answers(now.Add(-3 * time.Hour))}, late + strings.Repeat("x", 70)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, a.withLateNote(c.d, now).Text)
		})
	}
	off := &Activities{}
	assert.Equal(t, "Hi.", off.withLateNote(pipeline.Delivery{Session: key, Text: "Hi.", Answers: answers(now.Add(-3 * time.Hour))}, now).Text)
}
