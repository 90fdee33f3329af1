package discord

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/discord/discordtest"
)

// refuseAfterResume makes Discord end the open session while its
// connection is lost, and close every IDENTIFY with code: the gateway's
// RESUME gets op 9, and the IDENTIFY discordgo sends on the same
// connection is closed with code.
func refuseAfterResume(t *testing.T, s *setup, r *running, code int) {
	t.Helper()
	s.connected(t, r)
	s.fake.RefuseIdentifies(code)
	s.fake.InvalidateSessions()
	s.fake.DropConnections()
}

func TestARefusedIntentAfterAFailedResumeIsReportedAndItsIdentifiesBounded(t *testing.T) {
	s := newSetup(t, discordtest.Options{})
	s.tune.identifyBurst, s.tune.identifyEvery = 3, time.Hour
	r := s.run(t)
	refuseAfterResume(t, s, r, 4014)

	// The gateway holds its next IDENTIFY until the budget has one again
	// (an hour here); a gateway that keeps identifying is caught as soon
	// as it passes the budget.
	var h adapters.Health
	s.health.waitFor(t, "failed, held by the identify budget", func(got adapters.Health) bool {
		h = got
		held := got.State == adapters.StateFailed && got.NextAttemptAt != nil && time.Until(*got.NextAttemptAt) > 30*time.Minute
		return held || len(s.fake.Identifies()) > 3
	})
	id := s.fake.Identifies()
	require.Len(t, id, 3, "the first session's, the one after the refused RESUME, one on a new session; no more within the budget of 3")
	assert.Equal(t, 4014, id[1].CloseCode)
	assert.Equal(t, 4014, id[2].CloseCode)
	assert.Len(t, s.fake.Resumes(), 1, "the IDENTIFY after the refusal starts a new session: no RESUME of the one Discord ended")
	assert.Contains(t, h.Error, MessageContentHint, "reported as at a fresh start")
	assert.Contains(t, h.Error, "4014")
	assert.Contains(t, h.Error, "identify budget")
	line := s.logs.waitFor(t, "Message Content Intent", "4014")
	assert.True(t, strings.HasPrefix(line, "ERROR"), line)
	s.logs.waitFor(t, "IDENTIFY held", "budget")
	select {
	case <-r.done:
		t.Fatalf("the gateway stopped (%v); it must try again once the intent may have been enabled", r.err)
	default:
	}
	assert.Len(t, s.logs.with("gateway connection closed; connecting again"), 1, "the drop is an ordinary reconnect, the refusal after it is not")
}

// refusalCauses are the close codes no retry fixes, what the error must
// name, at a fresh start or after a refused RESUME alike.
var refusalCauses = map[int]string{
	4004: "REPLYFLOW_DISCORD_TOKEN",
	4010: "shard",
	4011: "sharding",
	4012: "API version",
	4013: "intents",
}

func TestARefusalNoRetryFixesStopsTheGatewayWhereverItComes(t *testing.T) {
	for code, cause := range refusalCauses {
		for _, afterResume := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d/after_resume=%v", code, afterResume), func(t *testing.T) {
				t.Parallel()
				s := newSetup(t, discordtest.Options{})
				if !afterResume {
					s.fake.RefuseIdentifies(code)
				}
				r := s.run(t)
				if afterResume {
					refuseAfterResume(t, s, r, code)
				}
				select {
				case <-r.done:
				case <-time.After(testWait):
					t.Fatalf("the gateway kept trying after close %d (%d IDENTIFYs)", code, len(s.fake.Identifies()))
				}
				require.Error(t, r.err)
				assert.Contains(t, r.err.Error(), cause)
				assert.Contains(t, r.err.Error(), fmt.Sprint(code))
				h := s.health.waitFor(t, "failed", func(h adapters.Health) bool { return h.State == adapters.StateFailed })
				assert.Contains(t, h.Error, cause)
				want := 1
				if afterResume {
					want = 3 // the first session's, the one after op 9, one on a new session that names the code
				}
				assert.Len(t, s.fake.Identifies(), want)
			})
		}
	}
}

func TestAnOrdinaryCloseStillResumesOrIdentifiesAgain(t *testing.T) {
	for name, tc := range map[string]struct {
		end        func(*discordtest.Server)
		identifies int
	}{
		"4000 unknown error: resumed":   {func(f *discordtest.Server) { f.CloseConnections(4000) }, 1},
		"1006 connection lost: resumed": {func(f *discordtest.Server) { f.DropConnections() }, 1},
		"4009 session timed out: a new session": {func(f *discordtest.Server) {
			f.InvalidateSessions()
			f.CloseConnections(4009)
		}, 2},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newSetup(t, discordtest.Options{})
			r := s.run(t)
			s.connected(t, r)
			tc.end(s.fake)
			waitFake(t, s.fake, "the RESUME", func() bool { return len(s.fake.Resumes()) == 1 && s.fake.Connections() == 1 })
			s.health.waitFor(t, "up again", func(h adapters.Health) bool { return h.State == adapters.StateUp })
			after := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "still there?"})
			s.sink.waitAccepted(t, after.ID)
			assert.Len(t, s.fake.Identifies(), tc.identifies)
			assert.Equal(t, tc.identifies == 1, s.fake.Resumes()[0].Resumed)
			assert.Empty(t, s.logs.with("identify budget"))
		})
	}
}

// discordgo's heartbeat goroutine of a connection that ended can call
// Close on its Session once more after the next connection is up (it
// fails its write to the closed socket). The connection that resumed has
// a Session of its own, so that late Close ends nothing: the next
// message arrives on it, with no other RESUME.
func TestALateCloseOfAnEndedConnectionLeavesTheNextOneUp(t *testing.T) {
	t.Parallel()
	s := newSetup(t, discordtest.Options{})
	r := s.run(t)
	s.connected(t, r)
	ended := r.g.ws.Load()
	s.fake.CloseConnections(4000)
	waitFake(t, s.fake, "the RESUME", func() bool { return len(s.fake.Resumes()) == 1 && s.fake.Connections() == 1 })
	s.health.waitFor(t, "up again", func(h adapters.Health) bool { return h.State == adapters.StateUp })

	require.NoError(t, ended.Close()) // what the ended connection's heartbeat goroutine may do
	after := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "still there?"})
	s.sink.waitAccepted(t, after.ID)
	assert.Len(t, s.fake.Resumes(), 1, "the connection that resumed stayed open")
	assert.Len(t, s.fake.Identifies(), 1)
	assert.Equal(t, 1, s.fake.Connections())
}
