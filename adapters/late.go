package adapters

import "time"

// LateAfter is how long after the platform says a message was sent the
// gateway may get it and still stamp it with its own clock: past it the
// message came late (redelivered after an outage, or fetched by a
// catch-up) and is stamped with the platform's time, so that the turn
// that answers it knows how long it waited. Below it the gateway's clock
// stands, which the first-chunk latency is measured from, and which
// small clock differences and Telegram's whole-second dates would blur.
const LateAfter = 2 * time.Second

// ReceivedAt is the time a message's Inbound carries (ReceivedAt): sent,
// the platform's time, when the gateway got it more than LateAfter after
// that, else now. A zero sent (the platform gave none) is now.
func ReceivedAt(now, sent time.Time) time.Time {
	if !sent.IsZero() && now.Sub(sent) > LateAfter {
		return sent.UTC()
	}
	return now.UTC()
}
