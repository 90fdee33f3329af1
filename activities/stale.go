package activities

import (
	"fmt"
	"strings"
	"time"

	"github.com/replyflow/replyflow/pipeline"
)

// heartbeatMessagePrefix starts the message ID of a heartbeat turn's
// prompt, which no person sent: its reply is never late.
const heartbeatMessagePrefix = "heartbeat/"

// staleNotePrefix begins every late reply's first line (StaleNote).
const staleNotePrefix = "(replying to "

// withStaleNote is reply with a first line saying which message it
// answers and how late, when the message it answers (the batch's last,
// the one the delivery replies to) was sent StaleAfter or more before
// now: a message caught up after an outage, queued behind a long turn, or
// a reply retried for hours must not read as if it answered something
// just said. A reply that stays silent, a heartbeat's, and one whose
// blocks were already sent while streaming (the rest follows them) are
// left as they are.
func (a *Activities) withStaleNote(req pipeline.TurnRequest, shown *pipeline.Shown, reply string, now time.Time) string {
	if a.StaleAfter <= 0 || len(req.Messages) == 0 {
		return reply
	}
	last := req.Messages[len(req.Messages)-1]
	if last.At.IsZero() || strings.HasPrefix(last.MessageID, heartbeatMessagePrefix) || now.Sub(last.At) < a.StaleAfter {
		return reply
	}
	if shownBlocks(shown) || shownBlocks(req.Shown) {
		return reply
	}
	text, deliver := pipeline.NormalizeReply(reply)
	if !deliver {
		return reply
	}
	return StaleNote(last, req.Group, now, a.location()) + "\n" + text
}

// withLateNote is d with the late reply's first line when d goes out
// StaleAfter or more after the message it answers (d.Answers: set on a
// delivery that may be retried for long, or parked), unless its text
// already begins with one (a turn that was late already, or an earlier
// attempt's). A chunk the line would push past the platform's limit goes
// as it is: its own delivery is what must not fail.
func (a *Activities) withLateNote(d pipeline.Delivery, now time.Time) pipeline.Delivery {
	m := d.Answers
	if a.StaleAfter <= 0 || m == nil || m.At.IsZero() || strings.HasPrefix(m.MessageID, heartbeatMessagePrefix) ||
		now.Sub(m.At) < a.StaleAfter || strings.HasPrefix(d.Text, staleNotePrefix) {
		return d
	}
	noted := StaleNote(*m, d.Group, now, a.location()) + "\n" + d.Text
	if !d.Whole {
		if chunks := a.chunker(d.Session.Channel).Chunk(noted, a.chunkLimit(d.Session)); len(chunks) != 1 {
			return d
		}
	}
	d.Text = noted
	return d
}

func shownBlocks(s *pipeline.Shown) bool { return s != nil && len(s.Blocks) > 0 }

func (a *Activities) location() *time.Location {
	if a.Location == nil {
		return time.UTC
	}
	return a.Location
}

// StaleNote is the first line of a late reply: "(replying to your
// message from 14:02, 3 h ago)"; in a group it names the sender, and a
// message of another day shows its date.
func StaleNote(m pipeline.TurnMessage, group bool, now time.Time, loc *time.Location) string {
	whose := "your"
	if name := pipeline.ClipName(m.SenderName); group && name != "" {
		whose = name + "'s"
	}
	at, today := m.At.In(loc), now.In(loc)
	when := at.Format("15:04")
	if y, mo, d := at.Date(); y != today.Year() || mo != today.Month() || d != today.Day() {
		when = at.Format("Jan 2, 15:04")
	}
	return fmt.Sprintf(staleNotePrefix+"%s message from %s, %s ago)", whose, when, ago(now.Sub(m.At)))
}

// ago is a wait as a person says it: minutes below an hour, hours below
// two days, then days.
func ago(d time.Duration) string {
	switch {
	case d < time.Hour:
		return fmt.Sprintf("%d min", max(int(d/time.Minute), 1))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d/time.Hour))
	default:
		return fmt.Sprintf("%d days", int(d/(24*time.Hour)))
	}
}
