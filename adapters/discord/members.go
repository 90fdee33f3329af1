package discord

import (
	"context"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/replyflow/replyflow/pipeline"
)

// Member counts feed the engagement ladder: a guild of five where one
// person speaks is a group, not a conversation with that person. The
// gateway attaches the guild's count to each guild message it hands on;
// a DM has none (the session knows a DM is two). Discord counts a guild,
// not a channel: a private channel of two in a big guild is counted as the
// guild, which errs towards the reserved side.
const (
	// memberCountTTL is how long a count is reused: each guild costs at
	// most one GET /guilds/{id}?with_counts=true a minute.
	memberCountTTL = pipeline.MembershipFreshness
	// memberCountWait bounds the lookup a message waits for; past it the
	// message goes on without a count (the session counts who speaks).
	memberCountWait = 2 * time.Second
	// maxCountedGuilds bounds the cache; past it the oldest entry goes.
	maxCountedGuilds = 4096
)

// memberCounter caches approximate member counts per guild, failures
// included (a failing guild is asked again after the TTL, not on every
// message). One lookup per guild runs at a time: the channels of a guild
// that ask together wait for it.
type memberCounter struct {
	ask func(ctx context.Context, guild string) (int, error)
	now func() time.Time

	mu       sync.Mutex
	entries  map[string]memberEntry
	order    []string                 // insertion order, for eviction
	inFlight map[string]chan struct{} // closed when the guild's lookup ends
	waiting  int                      // callers waiting for another's lookup
}

type memberEntry struct {
	count *pipeline.MembershipCount // nil when the lookup failed
	until time.Time
}

func newMemberCounter(ask func(ctx context.Context, guild string) (int, error), now func() time.Time) *memberCounter {
	return &memberCounter{ask: ask, now: now, entries: map[string]memberEntry{}, inFlight: map[string]chan struct{}{}}
}

// guildMembers asks Discord for a guild's approximate member count.
func guildMembers(s *discordgo.Session) func(ctx context.Context, guild string) (int, error) {
	return func(ctx context.Context, guild string) (int, error) {
		g, err := s.GuildWithCounts(guild, discordgo.WithContext(ctx))
		if err != nil {
			return 0, err
		}
		return g.ApproximateMemberCount, nil
	}
}

// count is the guild's humans as far as Discord says: its approximate
// member count but the bot itself, or nil when unknown. The count is
// approximate (Discord refreshes it now and then) and includes other
// bots, so it is marked Truncated: the engagement rules then never count
// fewer humans than they saw speak, and trust this number only as a
// floor.
func (m *memberCounter) count(ctx context.Context, guild string) (*pipeline.MembershipCount, error) {
	for {
		now := m.now()
		m.mu.Lock()
		e, ok := m.entries[guild]
		if ok && now.Before(e.until) {
			m.mu.Unlock()
			return e.count, nil // a cached failure is not reported again
		}
		wait, asking := m.inFlight[guild]
		if !asking {
			m.inFlight[guild] = make(chan struct{})
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
	ctx, cancel := context.WithTimeout(ctx, memberCountWait)
	defer cancel()
	n, err := m.ask(ctx, guild)
	e := memberEntry{until: now.Add(memberCountTTL)}
	if err == nil {
		e.count = &pipeline.MembershipCount{Humans: max(n-1, 0), Truncated: true, FetchedAt: now.UTC()}
	}
	m.put(guild, e)
	return e.count, err
}

func (m *memberCounter) put(guild string, e memberEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.entries[guild]; !ok {
		m.order = append(m.order, guild)
		if len(m.order) > maxCountedGuilds {
			delete(m.entries, m.order[0])
			m.order = m.order[1:]
		}
	}
	m.entries[guild] = e
	close(m.inFlight[guild])
	delete(m.inFlight, guild)
}
