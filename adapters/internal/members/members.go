// Package members caches the member counts that adapters attach to
// messages for the engagement rules (a Slack channel's, a Discord
// guild's): at most one lookup per key a minute, failures cached too, one
// lookup at a time per key, at most MaxKeys keys. It holds no platform
// code: each adapter passes its own lookup.
package members

import (
	"context"
	"sync"
	"time"

	"github.com/replyflow/replyflow/pipeline"
)

const (
	// TTL is how long a count is reused: the freshness the engagement
	// rules trust a count for, so each key costs at most one lookup a
	// minute.
	TTL = pipeline.MembershipFreshness
	// Wait bounds the lookup a message waits for; past it the message
	// goes on without a count (the session counts who speaks).
	Wait = 2 * time.Second
	// MaxKeys bounds the cache; past it the oldest entry goes.
	MaxKeys = 4096
)

// Counter caches member counts per key, failures included (a failing key
// is asked again after the TTL, not on every message). One lookup per key
// runs at a time: the messages that ask together wait for it.
type Counter struct {
	ask       func(ctx context.Context, key string) (int, error)
	now       func() time.Time
	truncated bool

	mu       sync.Mutex
	entries  map[string]entry
	order    []string                 // insertion order, for eviction
	inFlight map[string]chan struct{} // closed when the key's lookup ends
	waiting  int                      // callers waiting for another's lookup
}

type entry struct {
	count *pipeline.MembershipCount // nil when the lookup failed
	until time.Time
}

// New is a Counter asking ask, on the clock now. truncated marks every
// count as a floor, not ground truth (an approximate count, or one that
// includes other bots): the engagement rules then never count fewer
// humans than they saw speak.
func New(ask func(ctx context.Context, key string) (int, error), now func() time.Time, truncated bool) *Counter {
	return &Counter{ask: ask, now: now, truncated: truncated, entries: map[string]entry{}, inFlight: map[string]chan struct{}{}}
}

// Count is the key's humans as far as the platform says: its member
// count but the bot itself, or nil when unknown. A failure is returned
// once; until the TTL passes the key then counts as unknown.
func (m *Counter) Count(ctx context.Context, key string) (*pipeline.MembershipCount, error) {
	for {
		now := m.now()
		m.mu.Lock()
		e, ok := m.entries[key]
		if ok && now.Before(e.until) {
			m.mu.Unlock()
			return e.count, nil // a cached failure is not reported again
		}
		wait, asking := m.inFlight[key]
		if !asking {
			m.inFlight[key] = make(chan struct{})
			m.mu.Unlock()
			break
		}
		m.waiting++
		m.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
		}
		m.mu.Lock()
		m.waiting--
		m.mu.Unlock()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	now := m.now()
	ctx, cancel := context.WithTimeout(ctx, Wait)
	defer cancel()
	n, err := m.ask(ctx, key)
	e := entry{until: now.Add(TTL)}
	if err == nil {
		e.count = &pipeline.MembershipCount{Humans: max(n-1, 0), Truncated: m.truncated, FetchedAt: now.UTC()}
	}
	m.put(key, e)
	return e.count, err
}

func (m *Counter) put(key string, e entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.entries[key]; !ok {
		m.order = append(m.order, key)
		if len(m.order) > MaxKeys {
			delete(m.entries, m.order[0])
			m.order = m.order[1:]
		}
	}
	m.entries[key] = e
	close(m.inFlight[key])
	delete(m.inFlight, key)
}
