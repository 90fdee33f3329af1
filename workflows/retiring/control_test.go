package retiring

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/replyflow/replyflow/pipeline"
)

// answersTo maps each reply anchor to the texts delivered under it.
func (p *fakePlatform) answersTo() map[string][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string][]string{}
	for _, s := range p.sent {
		out[s.ReplyTo] = append(out[s.ReplyTo], s.Text)
	}
	return out
}

func TestHelpAndWhoamiAreAnsweredFromStateForEachSender(t *testing.T) {
	env, p := newEnv(t, withSlowModel(5*time.Second))
	signalAt(env, time.Second, inbound("m1", "a long question"))
	signalAt(env, 2*time.Second, inbound("h1", "/help"))
	signalAt(env, 2*time.Second, ownerInbound("h2", "/commands"))
	signalAt(env, 3*time.Second, inbound("w1", "/whoami"))
	signalAt(env, 3*time.Second, ownerInbound("w2", "/whoami"))
	run(t, env, nil)

	got := p.answersTo()
	assert.Equal(t, []string{pipeline.RenderHelp(false, pipeline.ClosedToMembers(nil))}, got["h1"])
	assert.NotContains(t, got["h1"][0], "/send on|off —", "a stranger is not shown the owners' commands as theirs")
	assert.Equal(t, []string{pipeline.RenderHelp(true, nil)}, got["h2"])
	assert.Contains(t, got["h2"][0], "/heartbeat every 30m")
	assert.Equal(t, []string{"You are webchat:alice (not an owner)."}, got["w1"])
	assert.Equal(t, []string{"You are webchat:boss (an owner of this agent)."}, got["w2"])
	for _, id := range []string{"h1", "w1"} {
		for _, s := range p.sent {
			if s.ReplyTo == id {
				assert.Less(t, s.At, 5*time.Second, "answered while the turn runs, not after it")
			}
		}
	}
	assert.Equal(t, []string{"a long question"}, p.turnTexts(), "commands never reach the model")
}

func TestADirectiveAppliesToItsOwnTurnOnly(t *testing.T) {
	env, p := newEnv(t, withMembersOpen())
	p.agent = func(req pipeline.TurnRequest) (pipeline.TurnResult, error) {
		return pipeline.TurnResult{Reply: "echo " + req.Text, Model: req.Model, Usage: &pipeline.Usage{InputTokens: 100, OutputTokens: 7}}, nil
	}
	signalAt(env, time.Second, inbound("m1", "/think: high what is 2+2? /usage tokens"))
	signalAt(env, time.Minute, inbound("m2", "and 3+3?"))
	signalAt(env, 2*time.Minute, inbound("m3", "see https://x.test/think high and /thinking aloud"))
	run(t, env, nil)

	require.Len(t, p.steps, 3)
	assert.Equal(t, pipeline.ThinkHigh, p.steps[0].Req.Think)
	assert.Equal(t, "what is 2+2?", p.steps[0].Req.Text, "the directives are taken out of what the model sees")
	assert.Equal(t, pipeline.ThinkLevel(""), p.steps[1].Req.Think, "the next turn is back to the session's setting")
	assert.Equal(t, "see https://x.test/think high and /thinking aloud", p.steps[2].Req.Text, "look-alikes are text")
	assert.Equal(t, pipeline.ThinkLevel(""), p.steps[2].Req.Think)
	got := p.answersTo()
	assert.Equal(t, []string{"echo what is 2+2?\n\n— 100 in · 7 out tokens"}, got["m1"], "the usage footer is that turn's")
	assert.Equal(t, []string{"echo and 3+3?"}, got["m2"])
}

func TestAUsageFooterSaysWhenTheModelReportedNone(t *testing.T) {
	env, p := newEnv(t, withMembersOpen())
	signalAt(env, time.Second, inbound("m1", "hi /usage full"))
	run(t, env, nil)
	assert.Equal(t, []string{"echo hi\n\n— usage not reported by demo/echo"}, p.answersTo()["m1"])
}

func TestAMessageOfDirectivesOnlySetsTheSessionAndIsAcknowledged(t *testing.T) {
	env, p := newEnv(t, withMembersOpen())
	p.agent = func(req pipeline.TurnRequest) (pipeline.TurnResult, error) {
		return pipeline.TurnResult{Reply: "fine", Model: req.Model, Usage: &pipeline.Usage{InputTokens: 10, OutputTokens: 2, CostUSD: 0.0005, HasCost: true}}, nil
	}
	signalAt(env, time.Second, inbound("d1", "/think low /usage full"))
	signalAt(env, time.Minute, inbound("m1", "hello"))
	signalAt(env, 2*time.Minute, inbound("m2", "again"))
	signalAt(env, 3*time.Minute, inbound("u1", "/usage"))
	signalAt(env, 4*time.Minute, inbound("t1", "/think"))
	run(t, env, nil)

	got := p.answersTo()
	assert.Equal(t, []string{"Set for this chat: think low, usage full."}, got["d1"])
	require.Len(t, p.steps, 2, "a message of directives runs no turn")
	assert.Equal(t, pipeline.ThinkLow, p.steps[0].Req.Think)
	assert.Equal(t, pipeline.ThinkLow, p.steps[1].Req.Think, "a session setting holds for every turn")
	assert.Equal(t, []string{"fine\n\n— 10 in · 2 out tokens · $0.0005"}, got["m1"])
	assert.Equal(t, []string{pipeline.RenderUsageTotals(pipeline.Usage{InputTokens: 20, OutputTokens: 4, CostUSD: 0.001, HasCost: true}, 2, pipeline.UsageFull)}, got["u1"])
	assert.Equal(t, []string{"Reasoning effort: low. Change it with /think off|low|medium|high."}, got["t1"])
	p.mu.Lock()
	defer p.mu.Unlock()
	require.NotEmpty(t, p.saved)
	last := p.saved[len(p.saved)-1]
	assert.Equal(t, pipeline.ThinkLow, last.Think, "kept in the session entry like /model")
	assert.Equal(t, pipeline.UsageFull, last.Usage)
}

func TestTheSessionStartsWithTheSavedChatSettings(t *testing.T) {
	env, p := newEnv(t)
	p.settings.Saved = pipeline.SessionSettings{Think: pipeline.ThinkMedium, Muted: true}
	signalAt(env, time.Second, inbound("m1", "hello"))
	run(t, env, nil)

	require.Len(t, p.steps, 1)
	assert.Equal(t, pipeline.ThinkMedium, p.steps[0].Req.Think)
	assert.Empty(t, p.replies(), "muted before, muted after a restart")
}

func TestSendOffDeliversNothingWhileTurnsStillRun(t *testing.T) {
	env, p := newEnv(t)
	signalAt(env, time.Second, inbound("x1", "/send off"))
	signalAt(env, 2*time.Second, ownerInbound("o1", "/send off"))
	signalAt(env, time.Minute, inbound("m1", "anyone there?"))
	signalAt(env, 2*time.Minute, ownerInbound("s1", "/status"))
	signalAt(env, 3*time.Minute, ownerInbound("o2", "/send on"))
	signalAt(env, 4*time.Minute, inbound("m2", "now?"))
	snap := queryStateAt(t, env, 90*time.Second)
	run(t, env, nil)

	got := p.answersTo()
	assert.Equal(t, []string{"⚠️ Only owners may mute or unmute this chat."}, got["x1"])
	assert.Equal(t, []string{"Muted: turns still run, but no reply is sent here until /send on."}, got["o1"])
	assert.Empty(t, got["m1"], "nothing is delivered while muted")
	assert.Contains(t, got["s1"][0], "Replies: muted")
	assert.Equal(t, []string{"echo now?"}, got["m2"])
	assert.Equal(t, []string{"anyone there?", "now?"}, p.turnTexts(), "the muted turn ran")
	assert.Equal(t, []pipeline.ReactionState{pipeline.ReactionDone, pipeline.ReactionNone}, p.statesOf("m1"),
		"a muted turn still shows it was handled")
	require.NotNil(t, snap.LastTurn)
	assert.Equal(t, outcomeMuted, snap.LastTurn.Outcome)
	require.NotNil(t, snap.Chat)
	assert.True(t, snap.Chat.Muted)
}

func TestCompactFallsBackAlongTheChainAndIsRefusedWhileATurnRuns(t *testing.T) {
	c := &controlFake{compactFails: map[string]string{"openai/a": pipeline.ErrRateLimited}}
	env, p := newEnv(t, withSlowModel(5*time.Second), withControl(c))
	p.settings.Models = []string{"openai/a", "anthropic/b"}
	signalAt(env, time.Second, inbound("m1", "a question"))
	signalAt(env, 2*time.Second, inbound("k1", "/compact"))
	signalAt(env, time.Minute, inbound("k2", "/compact keep the decisions"))
	run(t, env, nil)

	got := p.answersTo()
	assert.Equal(t, []string{"⚠️ A turn is running or waiting; send /compact again once it is answered."}, got["k1"])
	assert.Equal(t, []string{"Compacted: 12 message(s) became a summary of about 140 tokens (anthropic/b). The conversation goes on from it."}, got["k2"])
	require.Len(t, c.compacts, 2)
	assert.Equal(t, pipeline.CompactRequest{Session: demoSession, Key: "k2", Model: "openai/a", Focus: "keep the decisions"}, c.compacts[0])
	assert.Equal(t, "anthropic/b", c.compacts[1].Model, "a rate-limited model moves on to the next")
}

func TestContextAndExportAskTheirActivities(t *testing.T) {
	c := &controlFake{}
	env, p := newEnv(t, withControl(c))
	signalAt(env, time.Second, inbound("c1", "/context"))
	signalAt(env, 2*time.Second, inbound("e1", "/export"))
	run(t, env, nil)

	got := p.answersTo()
	require.Len(t, got["c1"], 1)
	assert.Contains(t, got["c1"][0], "300")
	require.Len(t, c.exports, 1)
	assert.Equal(t, pipeline.ExportRequest{Session: demoSession, IdempotencyKey: "session:webchat:demo/export/e1", ReplyTo: "e1"}, c.exports[0])
	assert.Empty(t, got["e1"], "the document is the answer")
	assert.Equal(t, []pipeline.ReactionState{pipeline.ReactionDone, pipeline.ReactionNone}, p.statesOf("e1"))
}

func TestVerboseShowsEachToolCallAsALine(t *testing.T) {
	env, p := newEnv(t, withMembersOpen())
	p.agent = func(req pipeline.TurnRequest) (pipeline.TurnResult, error) {
		if len(req.Rounds) == 0 {
			return pipeline.TurnResult{Model: req.Model, ToolCalls: []pipeline.ToolCall{{ID: "t1", Name: "lookup", Arguments: `{"q":"weather"}`}}}, nil
		}
		return pipeline.TurnResult{Reply: "sunny", Model: req.Model}, nil
	}
	signalAt(env, time.Second, inbound("m1", "weather? /verbose on"))
	signalAt(env, time.Minute, inbound("m2", "again?"))
	run(t, env, nil)

	got := p.answersTo()
	assert.Equal(t, []string{`🔧 lookup {"q":"weather"} → tool output for lookup`, "sunny"}, got["m1"])
	assert.Equal(t, []string{"sunny"}, got["m2"], "the directive held for its turn only")
}

func TestAModelDirectiveOutsideTheOpenModelsIsRefusedForStrangers(t *testing.T) {
	env, p := newEnv(t)
	p.settings.Models = []string{"demo/echo"}
	signalAt(env, time.Second, inbound("m1", "/model openai/gpt-expensive write me a novel"))
	signalAt(env, 2*time.Second, ownerInbound("m2", "/model openai/gpt-expensive write me a poem"))
	run(t, env, nil)

	got := p.answersTo()
	require.Len(t, got["m1"], 1)
	assert.Contains(t, got["m1"][0], "may choose only demo/echo")
	require.Len(t, p.steps, 1, "the stranger's message cost nothing")
	assert.Equal(t, "openai/gpt-expensive", p.steps[0].Req.Model)
	assert.Equal(t, "write me a poem", p.steps[0].Req.Text)
}

func TestResetWordsAndTheReplyPrefix(t *testing.T) {
	env, p := newEnv(t)
	p.settings.ResetWords = []string{"start over"}
	p.settings.ReplyPrefix = "[{model}] "
	signalAt(env, time.Second, inbound("r1", "Start over!"))
	signalAt(env, time.Minute, inbound("m1", "hi"))
	run(t, env, nil)

	got := p.answersTo()
	assert.Equal(t, []string{pipeline.NewTranscriptReply}, got["r1"])
	require.Len(t, p.steps, 1)
	assert.True(t, p.steps[0].Req.NewTranscript)
	assert.Equal(t, []string{"[demo/echo] echo hi"}, got["m1"])
}

func TestHeartbeatCommandIsForOwners(t *testing.T) {
	c := &controlFake{}
	env, p := newEnv(t, withControl(c))
	signalAt(env, time.Second, inbound("x1", "/heartbeat every 30m"))
	signalAt(env, 2*time.Second, inbound("x2", "/heartbeat"))
	signalAt(env, 3*time.Second, ownerInbound("o1", "/heartbeat every 30m 08:00-22:00 Europe/Berlin"))
	signalAt(env, 4*time.Second, ownerInbound("o2", "/heartbeat now"))
	signalAt(env, 5*time.Second, ownerInbound("o3", "/heartbeat off"))
	signalAt(env, 6*time.Second, ownerInbound("o4", "/heartbeat every 1m"))
	run(t, env, nil)

	got := p.answersTo()
	assert.Equal(t, []string{"⚠️ Only owners may change the heartbeat."}, got["x1"])
	assert.Contains(t, got["x2"][0], "No heartbeat in this chat")
	assert.Contains(t, got["o1"][0], "Heartbeat: every 30m 08:00-22:00 Europe/Berlin; next at 12:30 UTC")
	assert.Equal(t, []string{"⚠️ this chat has no heartbeat; set one with /heartbeat every 30m"}, got["o2"])
	assert.Equal(t, []string{"Heartbeat off."}, got["o3"])
	assert.Contains(t, got["o4"][0], "every must be from 5m", "a spec out of bounds is refused before any schedule call")
	assert.Equal(t, []string{"describe", "upsert every 30m 08:00-22:00 Europe/Berlin by webchat:boss", "trigger", "delete"}, c.schedules)
}

func TestHeartbeatTurnsSpeakOnlyWhenSomethingNeedsAttention(t *testing.T) {
	c := &controlFake{checklist: "- is the build green?"}
	env, p := newEnv(t, withControl(c), withSlowModel(5*time.Second))
	replies := map[int]string{0: "HEARTBEAT_OK", 1: "The build is red since 13:10. HEARTBEAT_OK"}
	p.agent = func(req pipeline.TurnRequest) (pipeline.TurnResult, error) {
		p.mu.Lock()
		n := 0
		for _, s := range p.steps {
			if strings.Contains(s.Req.Text, "HEARTBEAT") {
				n++
			}
		}
		p.mu.Unlock()
		if !strings.Contains(req.Text, "HEARTBEAT") {
			return pipeline.TurnResult{Reply: "echo " + req.Text, Model: req.Model}, nil
		}
		if r, ok := replies[n-1]; ok {
			return pipeline.TurnResult{Reply: r, Model: req.Model}, nil
		}
		return pipeline.TurnResult{Reply: strings.Repeat("The deploy failed. ", 20) + "HEARTBEAT_OK", Model: req.Model}, nil
	}
	tickAt(env, time.Minute, "tick-1")
	tickAt(env, time.Minute+time.Second, "tick-1") // the same tick again
	signalAt(env, 10*time.Minute, inbound("m1", "a question"))
	tickAt(env, 10*time.Minute+time.Second, "tick-2") // while the turn runs
	tickAt(env, 20*time.Minute, "tick-3")
	tickAt(env, 30*time.Minute, "tick-4")
	snap := queryStateAt(t, env, 25*time.Minute)
	run(t, env, nil)

	var heartbeatSteps []step
	for _, s := range p.steps {
		if strings.Contains(s.Req.Text, "HEARTBEAT") {
			heartbeatSteps = append(heartbeatSteps, s)
		}
	}
	require.Len(t, heartbeatSteps, 3, "tick-1 once, tick-2 skipped while busy, tick-3 and tick-4")
	assert.Contains(t, heartbeatSteps[0].Req.Text, "- is the build green?")
	assert.Empty(t, heartbeatSteps[0].Req.ThinkingOn, "no reaction on anything")
	ds := p.sentDeliveries()
	require.Len(t, ds, 2, "the answer to m1 and tick-4's long report; HEARTBEAT_OK with a short note is recorded, not sent")
	assert.Equal(t, "m1", ds[0].ReplyTo)
	assert.Empty(t, ds[1].ReplyTo, "a heartbeat report anchors no message")
	assert.True(t, strings.HasPrefix(ds[1].Text, "The deploy failed."))
	require.NotNil(t, snap.Chat)
	require.NotNil(t, snap.Chat.LastHeartbeat)
	assert.Equal(t, "tick-3", snap.Chat.LastHeartbeat.TickID)
	assert.Equal(t, HeartbeatAcked, snap.Chat.LastHeartbeat.Outcome)
	for _, r := range p.reactions {
		assert.NotContains(t, r.MessageID, "heartbeat", "a heartbeat shows no reaction")
	}
}

func TestAHeartbeatTickWhileBusyOrWithAnEmptyChecklistIsSkipped(t *testing.T) {
	c := &controlFake{}
	env, p := newEnv(t, withControl(c), withSlowModel(5*time.Second))
	signalAt(env, time.Second, inbound("m1", "a question"))
	tickAt(env, 2*time.Second, "busy")
	snapBusy := queryStateAt(t, env, 3*time.Second)
	tickAt(env, time.Minute, "empty")
	snapEmpty := queryStateAt(t, env, 2*time.Minute)
	signalAt(env, 3*time.Minute, ownerInbound("s1", "/status"))
	run(t, env, nil)

	assert.Equal(t, []string{"a question"}, p.turnTexts())
	require.NotNil(t, snapBusy.Chat.LastHeartbeat)
	assert.Equal(t, HeartbeatSkippedBusy, snapBusy.Chat.LastHeartbeat.Outcome)
	assert.Equal(t, HeartbeatSkippedEmpty, snapEmpty.Chat.LastHeartbeat.Outcome)
	assert.Contains(t, p.answersTo()["s1"][0], "Heartbeat: 2026-11-21 12:01 UTC: "+HeartbeatSkippedEmpty)
}

func TestHeartbeatTurnsDoNotKeepAnIdleSessionAlive(t *testing.T) {
	c := &controlFake{checklist: "- anything?"}
	env, p := newEnv(t, withControl(c))
	p.agent = func(req pipeline.TurnRequest) (pipeline.TurnResult, error) {
		if strings.Contains(req.Text, "HEARTBEAT") {
			return pipeline.TurnResult{Reply: "HEARTBEAT_OK", Model: req.Model}, nil
		}
		return pipeline.TurnResult{Reply: "hi", Model: req.Model}, nil
	}
	signalAt(env, time.Second, inbound("m1", "hello"))
	for i := 1; i <= 40; i++ {
		tickAt(env, time.Duration(i)*time.Hour, "tick-"+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	run(t, env, nil)

	ended := env.Now().Sub(testStart)
	// The last reaction clears a minute after the answer; the TTL counts
	// from then. Without the rule the hourly ticks would keep it alive.
	assert.Equal(t, 24*time.Hour+time.Minute+time.Second, ended.Round(time.Second))
	assert.Equal(t, 24, len(p.turnTexts())-1, "the ticks before the TTL ran")
}

func TestAMessageDuringCompactWaitsForTheNewTranscript(t *testing.T) {
	c := &controlFake{}
	env, p := newEnv(t, withControl(c))
	env.OnActivity(pipeline.ActivityCompactTranscript, mock.Anything, mock.Anything).After(10 * time.Second).Return(
		func(_ context.Context, req pipeline.CompactRequest) (pipeline.CompactResult, error) {
			return pipeline.CompactResult{Summarized: 3, SummaryTokens: 20, Model: req.Model}, nil
		})
	signalAt(env, time.Second, inbound("k1", "/compact"))
	signalAt(env, 2*time.Second, inbound("m1", "next question"))
	run(t, env, nil)

	require.Len(t, p.steps, 1)
	assert.GreaterOrEqual(t, p.steps[0].At, 11*time.Second, "the turn waited for the compaction to end")
	assert.Contains(t, p.answersTo()["k1"][0], "Compacted: 3 message(s)")
}

func TestAClearThatRunsLateIsCounted(t *testing.T) {
	metrics := &countingMetrics{counts: map[string]int64{}}
	suite := &testsuite.WorkflowTestSuite{}
	suite.SetMetricsHandler(metrics)
	env, _ := newEnvOn(t, suite, testStart)
	st := &State{Status: StatusIdle}
	st.Reactions = []Reaction{
		{MessageID: "late", State: pipeline.ReactionDone, ClearAt: testStart.Add(-5 * time.Minute), Shown: true},
		{MessageID: "due", State: pipeline.ReactionDone, ClearAt: testStart.Add(30 * time.Second), Shown: true},
	}
	run(t, env, st)
	assert.Equal(t, int64(1), metrics.count(MetricReactionsClearedLate+" channel=webchat"), "only the clear carried five minutes past its time")
}
