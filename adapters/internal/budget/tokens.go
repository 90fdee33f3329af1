package budget

import (
	"math"
	"time"
)

// Tokens is a plain token bucket on the caller's clock, without
// priorities or waiting: the fake platforms count calls against their
// published limits with it. The zero value is full at its first use.
type Tokens struct {
	n  float64
	at time.Time
}

// Wait refills the bucket (one token every `every`, up to burst) to now
// and says how long until it holds a token: 0 when it does.
func (t *Tokens) Wait(now time.Time, every time.Duration, burst int) time.Duration {
	if t.at.IsZero() {
		t.n, t.at = float64(burst), now
	}
	t.n = math.Min(float64(burst), t.n+float64(now.Sub(t.at))/float64(every))
	t.at = now
	if t.n >= 1 {
		return 0
	}
	return time.Duration((1 - t.n) * float64(every))
}

// Spend takes a token Wait said is there.
func (t *Tokens) Spend() { t.n-- }
