// Package budget is a chat's delivery budget: the one allowance that
// every outbound call to a chat draws on (reply chunks, proposals,
// command answers, block messages, reactions, streaming previews,
// typing), shaped as the platform's published limits, so that a burst
// is ordered and slowed here instead of refused by the platform.
//
// A budget is a set of token buckets, each named by its adapter (one per
// chat, one per group, one per bot or workspace method) with a Rule. A
// call draws from several at once (a Telegram message costs a token of
// its chat, of its group and of the bot). The order among calls is
// adapters.Priority:
//
//   - finals wait for their tokens (up to MaxWait, else the call fails
//     RateLimited with the time left, so that the activity's retry, not
//     a held worker slot, waits it out), and no call of lower priority
//     takes a token while a final waits on the same bucket;
//   - progress (blocks, reactions) waits likewise, behind finals;
//   - previews and typing never wait: they go only when every bucket
//     keeps its Reserve after them (room for a final that comes next)
//     and nobody waits on it; otherwise they answer adapters.ErrSkipped.
//     The caller's next call carries newer text: that is how preview
//     edits are coalesced and intermediate ones dropped under pressure.
//
// A platform's 429 cools the bucket it names for its retry-after: no
// call draws on it until then (previews are skipped, finals wait or fail
// RateLimited). The budget is per process: two workers sending to one
// chat each keep their own, and the platform's 429 with its retry-after,
// which each of them honours, is the only truth they share.
//
// Memory: at most maxBuckets buckets (see New), plus those a call waits
// on at that moment (never forgotten while waited on); a bucket that is
// full again, not cooling and waited on by nobody holds nothing a new
// one would not, and is forgotten first.
package budget

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/replyflow/replyflow/adapters"
)

// Rule is a token bucket: one token every Every, at most Burst at once.
// Reserve is how many tokens a preview must leave in the bucket. A zero
// Every is no limit (only cooldowns apply).
type Rule struct {
	Every   time.Duration
	Burst   int
	Reserve int
}

// Draw is what a call takes from one bucket: Cost tokens (0 for a call
// the platform does not count there, which still honours the bucket's
// cooldown and waits behind its finals).
type Draw struct {
	Key  string
	Rule Rule
	Cost int
}

// DefaultMaxBuckets bounds a budget's memory: at 10,000 buckets of about
// 100 bytes, about a megabyte.
const DefaultMaxBuckets = 10_000

// DefaultMaxWait is the longest a final or progress call waits here.
const DefaultMaxWait = 5 * time.Second

// Budget is safe for concurrent use.
type Budget struct {
	maxWait    time.Duration
	maxBuckets int
	now        func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
	// wake is closed (and replaced) when a waiter leaves or a cooldown
	// changes, so the waiters look again.
	wake chan struct{}
}

type bucket struct {
	rule     Rule
	tokens   float64
	at       time.Time // when tokens was last brought up to date
	cooldown time.Time
	waiting  [3]int // callers waiting here, by adapters.Priority
	used     time.Time
}

// New is a budget whose finals wait at most maxWait (DefaultMaxWait
// when 0) and that keeps at most maxBuckets buckets (DefaultMaxBuckets
// when 0); past that bound a bucket that is still in use may be
// forgotten, the oldest first: its chat may then meet a 429, which is
// honoured.
func New(maxWait time.Duration, maxBuckets int) *Budget {
	if maxWait <= 0 {
		maxWait = DefaultMaxWait
	}
	if maxBuckets <= 0 {
		maxBuckets = DefaultMaxBuckets
	}
	return &Budget{maxWait: maxWait, maxBuckets: maxBuckets, now: time.Now, buckets: map[string]*bucket{}, wake: make(chan struct{})}
}

// Take spends what the draws cost, once the priority p may: see the
// package doc. op names the call in errors.
func (b *Budget) Take(ctx context.Context, p adapters.Priority, op string, draws ...Draw) error {
	p = min(max(p, adapters.PriorityFinal), adapters.PriorityPreview)
	start := b.now()
	registered := false
	leave := func() {
		if registered {
			for _, d := range draws {
				if bk := b.buckets[d.Key]; bk != nil {
					bk.waiting[p]--
				}
			}
			registered = false
			b.broadcast()
		}
	}
	for {
		b.mu.Lock()
		now := b.now()
		bks := make([]*bucket, len(draws))
		for i, d := range draws {
			bks[i] = b.get(d, now)
		}
		if p == adapters.PriorityPreview {
			ok := b.spare(draws, bks, now)
			if ok {
				b.spend(draws, bks)
			}
			b.mu.Unlock()
			if !ok {
				return adapters.ErrSkipped
			}
			return nil
		}
		wait, blocked := b.waitFor(p, draws, bks, now)
		if wait == 0 && !blocked {
			b.spend(draws, bks)
			leave()
			b.mu.Unlock()
			return nil
		}
		if margin := adapters.SendMargin(ctx); margin > 0 && (wait > 0 || blocked) && timeLeftBelow(ctx, wait+margin) {
			// Waiting would leave a send too little of its caller's time:
			// refused now, so it never starts late enough to be cut by
			// the deadline after the platform took it (a send cut that
			// way is sent again by its retry).
			leave()
			b.mu.Unlock()
			return &adapters.Error{Kind: adapters.RateLimited, RetryAfter: max(wait, time.Second), Op: op,
				Err: fmt.Errorf("the chat's delivery budget has no room for %s early enough before the call's deadline", op)}
		}
		if wait > 0 && now.Add(wait).Sub(start) > b.maxWait {
			leave()
			b.mu.Unlock()
			return &adapters.Error{Kind: adapters.RateLimited, RetryAfter: wait, Op: op,
				Err: fmt.Errorf("the chat's delivery budget has no room for %s (the platform's rate limit, or its retry-after)", wait.Round(time.Millisecond))}
		}
		if wait == 0 && now.Sub(start) >= b.maxWait {
			// Held behind calls of higher priority all this while.
			leave()
			b.mu.Unlock()
			return &adapters.Error{Kind: adapters.RateLimited, RetryAfter: time.Second, Op: op,
				Err: fmt.Errorf("the chat's delivery budget gave its room to replies for %s", b.maxWait)}
		}
		if !registered {
			for _, bk := range bks {
				bk.waiting[p]++
			}
			registered = true
		}
		wake := b.wake
		b.mu.Unlock()
		if wait <= 0 {
			wait = b.maxWait // blocked: woken when the waiter ahead leaves
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-wake:
		case <-ctx.Done():
			t.Stop()
			b.mu.Lock()
			leave()
			b.mu.Unlock()
			return &adapters.Error{Kind: adapters.Transient, Op: op, Err: ctx.Err()}
		}
		t.Stop()
	}
}

// timeLeftBelow is true when ctx has a deadline less than d away.
func timeLeftBelow(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return ok && time.Until(deadline) < d
}

// spare says whether a preview may draw now: nothing cooling, nobody
// waiting, and every bucket keeps its reserve.
func (b *Budget) spare(draws []Draw, bks []*bucket, now time.Time) bool {
	for i, bk := range bks {
		if bk.cooldown.After(now) || bk.waiting[adapters.PriorityFinal] > 0 || bk.waiting[adapters.PriorityProgress] > 0 {
			return false
		}
		if d := draws[i]; d.Cost > 0 && limited(d.Rule) && bk.tokens < float64(d.Cost+d.Rule.Reserve) {
			return false
		}
	}
	return true
}

// waitFor is how long until the draws' tokens are there and their
// cooldowns over, and whether a waiter of higher priority holds p back.
func (b *Budget) waitFor(p adapters.Priority, draws []Draw, bks []*bucket, now time.Time) (wait time.Duration, blocked bool) {
	for i, bk := range bks {
		if c := bk.cooldown.Sub(now); c > wait {
			wait = c
		}
		for q := adapters.PriorityFinal; q < p; q++ {
			if bk.waiting[q] > 0 {
				blocked = true
			}
		}
		d := draws[i]
		if d.Cost > 0 && limited(d.Rule) {
			if short := float64(d.Cost) - bk.tokens; short > 0 {
				if w := time.Duration(short * float64(d.Rule.Every)); w > wait {
					wait = w
				}
			}
		}
	}
	return wait, blocked
}

func (b *Budget) spend(draws []Draw, bks []*bucket) {
	for i, bk := range bks {
		if limited(draws[i].Rule) {
			bk.tokens -= float64(draws[i].Cost)
		}
	}
}

func limited(r Rule) bool { return r.Every > 0 }

// get is d's bucket brought up to now, made full if new; b.mu is held.
func (b *Budget) get(d Draw, now time.Time) *bucket {
	bk, ok := b.buckets[d.Key]
	if !ok {
		b.makeRoom(now)
		bk = &bucket{tokens: float64(max(d.Rule.Burst, 1)), at: now}
		b.buckets[d.Key] = bk
	}
	bk.rule, bk.used = d.Rule, now
	// A bucket cooling down after a 429 earns nothing until it ends.
	if now.After(bk.at) {
		if limited(d.Rule) {
			burst := float64(max(d.Rule.Burst, 1))
			bk.tokens = min(burst, bk.tokens+float64(now.Sub(bk.at))/float64(d.Rule.Every))
		}
		bk.at = now
	}
	return bk
}

// makeRoom forgets buckets when the budget is full: first those a new
// bucket would equal (full, not cooling, nobody waiting), else the one
// used longest ago that nobody waits on, a cooling one last (forgetting
// a retry-after risks another 429).
func (b *Budget) makeRoom(now time.Time) {
	if len(b.buckets) < b.maxBuckets {
		return
	}
	var oldestKey string
	var oldest time.Time
	oldestCooling := true
	for k, bk := range b.buckets {
		if bk.waiting != [3]int{} {
			continue
		}
		cooling := bk.cooldown.After(now) || bk.at.After(now)
		full := !limited(bk.rule) || bk.tokens+float64(now.Sub(bk.at))/float64(bk.rule.Every) >= float64(max(bk.rule.Burst, 1))
		if full && !cooling {
			delete(b.buckets, k)
			continue
		}
		if oldestKey == "" || (oldestCooling && !cooling) || (cooling == oldestCooling && bk.used.Before(oldest)) {
			oldestKey, oldest, oldestCooling = k, bk.used, cooling
		}
	}
	if len(b.buckets) >= b.maxBuckets && oldestKey != "" {
		delete(b.buckets, oldestKey)
	}
}

func (b *Budget) broadcast() {
	close(b.wake)
	b.wake = make(chan struct{})
}

// Cool holds key's bucket for d: the platform answered 429 with that
// retry-after. A longer cooldown already set stays.
func (b *Budget) Cool(key string, d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	bk, ok := b.buckets[key]
	if !ok {
		b.makeRoom(now)
		bk = &bucket{at: now, used: now}
		b.buckets[key] = bk
	}
	if until := now.Add(d); until.After(bk.cooldown) {
		bk.cooldown = until
	}
	// What the platform counted is spent: the bucket starts empty after.
	bk.tokens = min(bk.tokens, 0)
	bk.at = bk.cooldown
	b.broadcast()
}

// CoolingDown is how long key's bucket is still held after a 429.
func (b *Budget) CoolingDown(key string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if bk, ok := b.buckets[key]; ok {
		return max(0, bk.cooldown.Sub(b.now()))
	}
	return 0
}

// Len is how many buckets the budget keeps now.
func (b *Budget) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.buckets)
}

// RateLimited says whether err is a rate-limit failure, and its wait.
func RateLimited(err error) (time.Duration, bool) {
	var e *adapters.Error
	if errors.As(err, &e) && e.Kind == adapters.RateLimited {
		return e.RetryAfter, true
	}
	return 0, false
}
