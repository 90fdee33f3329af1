package adapters

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/replyflow/replyflow/pipeline"
)

// A starting gateway's cursors: a conversation with a running session
// reads on from the earliest of its last messages less a margin (the
// session drops the overlap); one whose sessions all closed reads on
// from the last message of the last of them exactly (a new session would
// answer the overlap again); another workspace's and a closed run that
// took nothing add none.
func TestCatchupCursors(t *testing.T) {
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	run := func(chat string, last, started time.Time) OpenSession {
		return OpenSession{Key: pipeline.SessionKey{Channel: "slack", Account: "T1", Chat: chat}, LastInboundAt: last, StartedAt: started}
	}
	ended := func(chat string, last time.Time) OpenSession {
		s := run(chat, last, last.Add(-time.Hour))
		s.ClosedAt = last.Add(time.Hour)
		return s
	}
	other := run("C9", at, at)
	other.Key.Account = "T2"
	open := []OpenSession{
		run("C1", at, at.Add(-time.Hour)),
		run("C1", at.Add(-10*time.Minute), at.Add(-time.Hour)), // per-sender scope: the earliest
		run("C2", time.Time{}, at.Add(-5*time.Minute)),         // no worker ran it yet: its start
		other,
	}
	closed := []OpenSession{
		ended("C1", at.Add(-3*time.Hour)), // C1 runs: its running sessions say
		ended("C3", at.Add(-4*time.Hour)),
		ended("C3", at.Add(-2*time.Hour)), // continued or ended later: the last
		ended("C4", time.Time{}),
	}
	assert.Equal(t, map[string]time.Time{
		"C1": at.Add(-10*time.Minute - time.Minute),
		"C2": at.Add(-5*time.Minute - time.Minute),
		"C3": at.Add(-2 * time.Hour),
	}, CatchupCursors(open, closed, "T1", time.Minute))
}

func TestMostRecentKeepsTheNewestCursorsFirst(t *testing.T) {
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	since := map[string]time.Time{"old": at, "new": at.Add(time.Hour), "mid-b": at.Add(time.Minute), "mid-a": at.Add(time.Minute)}
	assert.Equal(t, []string{"new", "mid-a", "mid-b", "old"}, MostRecent(since, 10))
	assert.Equal(t, []string{"new", "mid-a"}, MostRecent(since, 2), "ties in name order, so the cut is the same every time")
	assert.Empty(t, MostRecent(since, 0))
	assert.Empty(t, MostRecent(nil, 3))
}
