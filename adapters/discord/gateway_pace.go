package discord

import (
	"net/http"
	"time"

	"golang.org/x/time/rate"
)

// Discord's global limit is 50 calls a second per bot. The worker's
// delivery budget takes 35 a second with 10 at once (globalRule); the
// gateway's own REST calls (channel lookups and history for a catch-up,
// active threads, interaction answers) are paced to gatewayCallsPerSecond
// with as many at once, so the two together stay within 50 in any second
// even when a restart's catch-up looks up every open session's channel.
const gatewayCallsPerSecond = 5

// pacedTransport waits for the gateway's share of the global limit before
// each call; a call whose context ends while it waits fails with that
// context's error, as the receiver's retries expect.
type pacedTransport struct {
	next    http.RoundTripper
	limiter *rate.Limiter
}

func (t pacedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.limiter.Wait(req.Context()); err != nil {
		return nil, err
	}
	return t.next.RoundTrip(req)
}

// pacedClient is c (or a default client) with its calls paced to the
// gateway's share; the calls of one gateway process share one limiter.
func pacedClient(c *http.Client) *http.Client {
	paced := http.Client{Timeout: 20 * time.Second} // discordgo's own default
	if c != nil {
		paced = *c
	}
	next := paced.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	paced.Transport = pacedTransport{next: next, limiter: rate.NewLimiter(gatewayCallsPerSecond, gatewayCallsPerSecond)}
	return &paced
}
