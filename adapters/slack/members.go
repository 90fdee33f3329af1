package slack

import (
	"context"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/replyflow/replyflow/pipeline"
)

// Member counts feed the engagement ladder: a channel of five where one
// person speaks is a group, not a conversation with that person. The
// gateway attaches a count to each channel message it hands on; the
// session keeps the newest.
const (
	// memberCountTTL is how long a count is reused: the freshness the
	// engagement rules trust a count for, so each channel costs at most
	// one conversations.info a minute (Tier 3: about 50 a minute).
	memberCountTTL = pipeline.MembershipFreshness
	// memberCountWait bounds the lookup a message waits for; past it the
	// message goes on without a count (the session counts who speaks).
	memberCountWait = 2 * time.Second
	// maxCountedChannels bounds the cache; past it the oldest entry goes.
	maxCountedChannels = 4096
)

// memberCounter caches conversations.info's member count per channel,
// failures included (a failing channel is asked again after the TTL, not
// on every message).
type memberCounter struct {
	ask func(ctx context.Context, channel string) (int, error)
	now func() time.Time

	mu      sync.Mutex
	entries map[string]memberEntry
	order   []string // insertion order, for eviction
}

type memberEntry struct {
	count *pipeline.MembershipCount // nil when the lookup failed
	until time.Time
}

func newMemberCounter(ask func(ctx context.Context, channel string) (int, error), now func() time.Time) *memberCounter {
	return &memberCounter{ask: ask, now: now, entries: map[string]memberEntry{}}
}

// ConversationMembers asks conversations.info for a channel's number of
// members: ReceiverConfig.CountMembers for an API client.
func ConversationMembers(api *slack.Client) func(ctx context.Context, channel string) (int, error) {
	return func(ctx context.Context, channel string) (int, error) {
		info, err := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: channel, IncludeNumMembers: true})
		if err != nil {
			return 0, classify("conversations.info", err)
		}
		return info.NumMembers, nil
	}
}

// count is the channel's humans as far as Slack says: its members but the
// bot itself (Slack counts other bots as members too, so this errs high,
// which makes the agent more reserved, not less), or nil when unknown.
func (m *memberCounter) count(ctx context.Context, channel string) (*pipeline.MembershipCount, error) {
	now := m.now()
	m.mu.Lock()
	e, ok := m.entries[channel]
	m.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.count, nil
	}
	ctx, cancel := context.WithTimeout(ctx, memberCountWait)
	defer cancel()
	n, err := m.ask(ctx, channel)
	e = memberEntry{until: now.Add(memberCountTTL)}
	if err == nil {
		e.count = &pipeline.MembershipCount{Humans: max(n-1, 0), FetchedAt: now.UTC()}
	}
	m.put(channel, e)
	return e.count, err
}

func (m *memberCounter) put(channel string, e memberEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.entries[channel]; !ok {
		m.order = append(m.order, channel)
		if len(m.order) > maxCountedChannels {
			delete(m.entries, m.order[0])
			m.order = m.order[1:]
		}
	}
	m.entries[channel] = e
}
