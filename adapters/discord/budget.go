package discord

import (
	"sync"
	"time"
)

// identifyBudget is a token bucket on the IDENTIFYs one gateway process
// sends. Discord allows a bot token 1,000 IDENTIFYs a day and resets the
// token once they are spent, so a gateway that identifies in a loop (a
// refused intent, a session ended again and again) would lose the bot. The
// bucket holds identifyBurst (10) and gains one back every identifyEvery
// (16 minutes): at most 10 + 90 = 100 IDENTIFYs in any 24 hours, a tenth
// of Discord's budget, per gateway process (each gateway identifies on its
// own, so k gateways spend k tenths). A RESUME that Discord refuses (op 9)
// makes discordgo identify on the same connection before the gateway can
// ask, so every attempt that may identify takes a token first, and gives
// it back when it resumed or never reached Discord.
type identifyBudget struct {
	mu     sync.Mutex
	size   float64
	every  time.Duration
	tokens float64 // below zero after an IDENTIFY discordgo sent by itself; repaid before the next
	at     time.Time
	now    func() time.Time
}

func newIdentifyBudget(size int, every time.Duration, now func() time.Time) *identifyBudget {
	return &identifyBudget{size: float64(size), every: every, tokens: float64(size), at: now(), now: now}
}

// fill adds what the time since the last call earned; b.mu must be held.
func (b *identifyBudget) fill() {
	t := b.now()
	b.tokens = min(b.size, b.tokens+float64(t.Sub(b.at))/float64(b.every))
	b.at = t
}

// take spends one IDENTIFY if the budget holds one; otherwise it spends
// nothing and says how long until it does.
func (b *identifyBudget) take() (wait time.Duration, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fill()
	if b.tokens >= 1 {
		b.tokens--
		return 0, true
	}
	return time.Duration((1 - b.tokens) * float64(b.every)), false
}

// refund gives back a token taken for an attempt that sent no IDENTIFY.
func (b *identifyBudget) refund() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fill()
	b.tokens = min(b.size, b.tokens+1)
}

// spend counts an IDENTIFY the gateway did not take a token for
// (discordgo's own, after an op 9), even into debt: the next take waits
// until it is repaid.
func (b *identifyBudget) spend() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fill()
	b.tokens--
}
