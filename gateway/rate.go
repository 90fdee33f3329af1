package gateway

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"
)

// Rate is one inbound limit as a token bucket: Burst messages at once,
// then one more every Every. The zero Rate is off.
//
// It is written <burst>@<interval>, "20@2s" (twenty at once, then one
// every 2 s, so 30 a minute once the burst is spent), or "off".
type Rate struct {
	Burst int
	Every time.Duration
}

// Bounds of a Rate: a burst past a million or a refill slower than a day
// is a typo, not a limit.
const (
	maxBurst = 1_000_000
	maxEvery = 24 * time.Hour
)

// Off says whether the limit is off.
func (r Rate) Off() bool { return r.Burst == 0 }

func (r Rate) String() string {
	if r.Off() {
		return "off"
	}
	return strconv.Itoa(r.Burst) + "@" + r.Every.String()
}

// bucket is a full token bucket of r; nil when r is off.
func (r Rate) bucket() *rate.Limiter {
	if r.Off() {
		return nil
	}
	return rate.NewLimiter(rate.Every(r.Every), r.Burst)
}

// ParseRate reads a Rate: <burst>@<interval> ("20@2s"), or "off".
func ParseRate(s string) (Rate, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "off") {
		return Rate{}, nil
	}
	burstText, everyText, found := strings.Cut(s, "@")
	if !found {
		return Rate{}, fmt.Errorf("%q is not a rate: write <burst>@<interval>, like 20@2s (20 at once, then one every 2s), or off", s)
	}
	burst, err := strconv.Atoi(burstText)
	if err != nil || burst < 1 || burst > maxBurst {
		return Rate{}, fmt.Errorf("%q: the burst before @ must be a whole number from 1 to %d (or write off)", s, maxBurst)
	}
	every, err := time.ParseDuration(everyText)
	if err != nil || every <= 0 || every > maxEvery {
		return Rate{}, fmt.Errorf("%q: the interval after @ must be a duration above 0 and at most %s, like 2s or 1m", s, maxEvery)
	}
	return Rate{Burst: burst, Every: every}, nil
}
