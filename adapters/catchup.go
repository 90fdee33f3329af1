package adapters

import (
	"maps"
	"slices"
	"strings"
	"time"
)

// CatchupCursors is, by chat of account, the time after which a catch-up
// reads a conversation's history when a gateway starts, from the sessions
// Temporal lists: where a session runs, the earliest of its sessions'
// last messages (else their starts: a per-sender scope has several) less
// margin, as the running session drops what it already has; where all
// closed, the last message of the last of them exactly, as a new session
// would answer a copy again. A closed run that never took a message adds
// nothing.
func CatchupCursors(open, closed []OpenSession, account string, margin time.Duration) map[string]time.Time {
	since := map[string]time.Time{}
	for _, s := range open {
		if s.Key.Account != account {
			continue // another bot's (another token's)
		}
		at := s.LastInboundAt
		if at.IsZero() {
			at = s.StartedAt
		}
		at = at.Add(-margin)
		if prev, ok := since[s.Key.Chat]; !ok || at.Before(prev) {
			since[s.Key.Chat] = at
		}
	}
	ended := map[string]time.Time{}
	for _, s := range closed {
		if s.Key.Account != account || s.LastInboundAt.IsZero() {
			continue
		}
		if _, running := since[s.Key.Chat]; running {
			continue
		}
		if prev, ok := ended[s.Key.Chat]; !ok || s.LastInboundAt.After(prev) {
			ended[s.Key.Chat] = s.LastInboundAt
		}
	}
	for chat, at := range ended {
		since[chat] = at
	}
	return since
}

// MostRecent are the chats of since with the newest cursors first, at
// most n of them: what a catch-up bounded to n conversations reads, as
// the most recently active are the likeliest to have someone waiting.
func MostRecent(since map[string]time.Time, n int) []string {
	chats := slices.SortedFunc(maps.Keys(since), func(a, b string) int {
		if c := since[b].Compare(since[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return chats[:min(len(chats), max(n, 0))]
}
