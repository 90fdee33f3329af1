package discord

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestTheIdentifyBudgetSpendsATenthOfDiscordsDailyIdentifies(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	tune := defaultTuning()
	b := newIdentifyBudget(tune.identifyBurst, tune.identifyEvery, func() time.Time { return now })
	// An IDENTIFY whenever the budget allows one, for a day.
	spent := 0
	for now.Before(start.Add(24 * time.Hour)) {
		wait, ok := b.take()
		if ok {
			spent++
			continue
		}
		assert.Positive(t, wait)
		now = now.Add(wait)
	}
	assert.LessOrEqual(t, spent, 100, "at most a tenth of Discord's 1,000 a day")
	assert.GreaterOrEqual(t, spent, 99)

	now = now.Add(24 * time.Hour) // full again
	for range 10 {
		_, ok := b.take()
		assert.True(t, ok)
	}
	_, ok := b.take()
	assert.False(t, ok, "the burst is 10")
	b.refund()
	_, ok = b.take()
	assert.True(t, ok, "a RESUME's token comes back")
	b.spend() // discordgo identified by itself after an op 9: a debt
	wait, ok := b.take()
	assert.False(t, ok)
	assert.Equal(t, 2*tune.identifyEvery, wait, "the debt is repaid before the next IDENTIFY")
}
