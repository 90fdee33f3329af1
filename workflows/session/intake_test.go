package session

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

var t0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func envAt(d time.Duration) Env {
	return Env{Now: t0.Add(d), Key: pipeline.SessionKey{Channel: "web", Account: "a", Chat: "c"}}
}

func msg(id, sender string) pipeline.Inbound {
	return pipeline.Inbound{MessageID: id, SenderID: sender, Text: "hello " + id}
}

func debounce(d time.Duration) pipeline.QueueSettings {
	return pipeline.QueueSettings{Mode: pipeline.QueueFollowup, Debounce: pipeline.Duration(d), Cap: 10}
}

func TestAdmitDropsARedeliveryWithinTheWindowAndForgetsAfterIt(t *testing.T) {
	var s IntakeState
	assert.Equal(t, []Effect{Emit{MessageAccepted{In: msg("1", "u")}}}, s.Admit(envAt(0), msg("1", "u")))
	assert.Empty(t, s.Admit(envAt(time.Minute), msg("1", "u")), "a redelivery is not accepted again")
	assert.Equal(t, 1, s.Duplicates)
	assert.NotEmpty(t, s.Admit(envAt(time.Minute+dedupeWindow+time.Second), msg("1", "u")), "past the window an ID is new again")
	assert.Equal(t, 2, s.Inbound)
}

func TestAdmitKeepsHugeIDsByTheirHash(t *testing.T) {
	var s IntakeState
	huge := msg(strings.Repeat("x", 10_000), "u")
	require.NotEmpty(t, s.Admit(envAt(0), huge))
	assert.Empty(t, s.Admit(envAt(time.Second), huge))
	assert.LessOrEqual(t, len(s.Seen[0].ID), 64)
}

func TestAWindowClosesAfterTheLastMessageOrAtItsMaximumWait(t *testing.T) {
	tests := []struct {
		name      string
		arrivals  []time.Duration // when each message of one sender arrives
		closesAt  time.Duration   // when the batch is ready
		timers    int             // timers the window armed in all
		batchSize int
	}{
		{name: "one message", arrivals: []time.Duration{0}, closesAt: time.Second, timers: 1, batchSize: 1},
		{name: "a burst extends the window without a timer per message", arrivals: []time.Duration{0, 500 * time.Millisecond, 900 * time.Millisecond}, closesAt: 1900 * time.Millisecond, timers: 2, batchSize: 3},
		{name: "a sender who never pauses is answered at the maximum wait", arrivals: []time.Duration{0, 900 * time.Millisecond, 1800 * time.Millisecond, 2700 * time.Millisecond, 3600 * time.Millisecond, 4500 * time.Millisecond}, closesAt: 5 * time.Second, timers: 2, batchSize: 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s IntakeState
			var armed []Arm
			var ready []Batch
			collect := func(effects []Effect) {
				for _, e := range effects {
					switch e := e.(type) {
					case Arm:
						armed = append(armed, e)
					case Emit:
						ready = append(ready, e.Event.(BatchReady).Batch)
					}
				}
			}
			for i, at := range tt.arrivals {
				collect(s.Hold(envAt(at), msg(string(rune('a'+i)), "u"), debounce(time.Second)))
			}
			// Fire each timer at its time, as the runner would, until the
			// window closes.
			for i := 0; i < len(armed) && len(ready) == 0; i++ {
				collect(s.Fired(envAt(armed[i].At.Sub(t0)), armed[i].Timer, debounce(time.Second)))
			}
			require.Len(t, ready, 1)
			assert.Len(t, ready[0].Messages, tt.batchSize)
			assert.Equal(t, t0.Add(tt.closesAt), armed[len(armed)-1].At)
			assert.Len(t, armed, tt.timers)
			assert.False(t, s.Holding())
		})
	}
}

func TestAWindowAtItsBoundsClosesAtOnceAndDisarmsItsTimer(t *testing.T) {
	var s IntakeState
	var out []Effect
	for i := range maxBufferedMessages {
		out = s.Hold(envAt(time.Duration(i)*time.Millisecond), msg(string(rune(0x100+i)), "u"), debounce(time.Minute))
	}
	require.Len(t, out, 2)
	assert.Equal(t, Disarm{Timer: windowTimer(1)}, out[0])
	assert.Len(t, out[1].(Emit).Event.(BatchReady).Batch.Messages, maxBufferedMessages)
	assert.Empty(t, s.Fired(envAt(time.Hour), windowTimer(1), debounce(time.Minute)), "a closed window's timer closes nothing")
}

func TestOpeningOneWindowTooManyClosesTheOldest(t *testing.T) {
	var s IntakeState
	for i := range maxOpenBuffers {
		s.Hold(envAt(0), msg(string(rune('a'+i)), string(rune('A'+i))), debounce(time.Minute))
	}
	out := s.Hold(envAt(0), msg("z", "Z"), debounce(time.Minute))
	require.Len(t, out, 3)
	assert.Equal(t, "A", out[1].(Emit).Event.(BatchReady).Batch.Last().SenderID)
	assert.Len(t, s.Buffers, maxOpenBuffers)
}

func TestResumeArmsTheCarriedWindowsAtTheirTimes(t *testing.T) {
	var s IntakeState
	s.Hold(envAt(0), msg("a", "u"), debounce(time.Second))
	carried := State{Intake: s}
	out := carried.Intake.Resume()
	require.Len(t, out, 1)
	assert.Equal(t, t0.Add(time.Second), out[0].(Arm).At)
}
