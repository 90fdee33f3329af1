package slack

import (
	"context"
	"time"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/internal/budget"
)

// DefaultPostInterval is the least time between two posts in one
// channel on average: chat.postMessage allows about one a second per
// channel, with short bursts, so a burst of chunks is slowed here rather
// than refused with 429.
const DefaultPostInterval = time.Second

// tiers are the Web API methods the client calls that Slack limits per
// workspace, and how many calls a minute their tier allows (Tier 2: 20,
// Tier 3: 50, Tier 4: 100). chat.postMessage has its own limit, per
// channel (DefaultPostInterval).
var tiers = map[string]int{
	"chat.update":           50,
	"chat.delete":           50,
	"chat.postEphemeral":    100,
	"reactions.add":         50,
	"reactions.get":         50,
	"reactions.remove":      20,
	"conversations.history": 50,
	"conversations.replies": 50,
}

const opPost = "chat.postMessage"

// pacer is the client's delivery budget (adapters/internal/budget) with
// Slack's buckets: one per channel ("c<channel>"), which posts cost and
// every other call in the channel honours (its 429 cooldown, its
// finals first), and one per tiered method ("m<method>"), workspace-wide.
// A non-positive interval paces nothing (429s are still honoured).
type pacer struct {
	every  time.Duration
	budget *budget.Budget
}

func newPacer(every time.Duration) *pacer {
	return &pacer{every: every, budget: budget.New(budget.DefaultMaxWait, budget.DefaultMaxBuckets)}
}

func (p *pacer) on() bool { return p.every > 0 }

func (p *pacer) draws(channel, op string) []budget.Draw {
	ch := budget.Draw{Key: "c" + channel}
	if p.on() {
		ch.Rule = budget.Rule{Every: p.every, Burst: 2, Reserve: 1}
	}
	if op == opPost {
		ch.Cost = 1
		return []budget.Draw{ch}
	}
	d := []budget.Draw{ch}
	if perMinute, tiered := tiers[op]; tiered {
		m := budget.Draw{Key: "m" + op, Cost: 1}
		if p.on() {
			// Two thirds of the minute at once, a fifth kept from
			// previews.
			m.Rule = budget.Rule{Every: time.Minute / time.Duration(perMinute), Burst: max(2*perMinute/3, 1), Reserve: perMinute / 5}
		}
		d = append(d, m)
	}
	return d
}

// wait takes what a call of op in channel costs, at priority pr; see
// budget.Budget.Take.
func (p *pacer) wait(ctx context.Context, pr adapters.Priority, channel, op string) error {
	return p.budget.Take(ctx, pr, op, p.draws(channel, op)...)
}

// cool holds what a 429's Retry-After names: the channel's posts, or
// the method across the workspace.
func (p *pacer) cool(channel, op string, d time.Duration) {
	if _, tiered := tiers[op]; tiered {
		p.budget.Cool("m"+op, d)
		return
	}
	p.budget.Cool("c"+channel, d)
}
