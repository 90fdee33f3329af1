package slack

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/replyflow/replyflow/adapters"
)

// DefaultPostInterval is the least time between two posts in one
// channel: chat.postMessage allows about one a second per channel, with
// short bursts, so a burst of chunks is slowed here rather than refused
// with 429.
const DefaultPostInterval = time.Second

// maxPacedChannels bounds the pacer's memory; channels quiet for a
// minute are forgotten first when it is full (a channel over the bound
// that is still busy is kept: the map may then grow past it briefly).
const maxPacedChannels = 10_000

type channelPace struct {
	limiter *rate.Limiter
	// cooldown is when a 429's Retry-After ends: until then nothing is
	// posted in the channel.
	cooldown time.Time
	lastUsed time.Time
}

// pacer spaces posts per channel and holds a channel after a 429. A
// wait lasts at most one interval, or until ctx ends.
type pacer struct {
	every    time.Duration
	mu       sync.Mutex
	channels map[string]*channelPace
}

func newPacer(every time.Duration) *pacer {
	return &pacer{every: every, channels: map[string]*channelPace{}}
}

func (p *pacer) get(channel string, now time.Time) *channelPace {
	c, ok := p.channels[channel]
	if !ok {
		if len(p.channels) >= maxPacedChannels {
			for id, old := range p.channels {
				if now.Sub(old.lastUsed) > time.Minute {
					delete(p.channels, id)
				}
			}
		}
		c = &channelPace{limiter: rate.NewLimiter(rate.Inf, 1)}
		if p.every > 0 {
			c.limiter = rate.NewLimiter(rate.Every(p.every), 1)
		}
		p.channels[channel] = c
	}
	c.lastUsed = now
	return c
}

// wait blocks until a post may go to channel. In a 429's cooldown it
// does not wait: it answers a rate-limited error with the time left, so
// the activity's retry, not a held worker slot, waits it out.
func (p *pacer) wait(ctx context.Context, channel, op string) error {
	p.mu.Lock()
	c := p.get(channel, time.Now())
	cooldown := time.Until(c.cooldown)
	p.mu.Unlock()
	if cooldown > 0 {
		return &adapters.Error{Kind: adapters.RateLimited, RetryAfter: cooldown, Op: op, Err: errors.New("the channel is cooling down after a 429")}
	}
	return c.limiter.Wait(ctx)
}

// cool holds every post to channel for d, after Slack answered 429.
func (p *pacer) cool(channel string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.get(channel, time.Now())
	if until := time.Now().Add(d); until.After(c.cooldown) {
		c.cooldown = until
	}
}
