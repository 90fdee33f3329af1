package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHeartbeatAck(t *testing.T) {
	long := strings.Repeat("x", MaxHeartbeatAckRunes+1)
	cases := []struct {
		reply string
		ack   bool
	}{
		{"HEARTBEAT_OK", true},
		{"  heartbeat_ok  ", true},
		{"HEARTBEAT_OK all quiet, the build is green.", true},
		{"All quiet. HEARTBEAT_OK!", true},
		{"NO_REPLY", true},
		{"", true},
		{"HEARTBEAT_OK " + strings.Repeat("é", MaxHeartbeatAckRunes), true},
		{"HEARTBEAT_OK " + long, false},
		{"The build is red.", false},
		{"say HEARTBEAT_OK when done", false}, // in the middle: not a token
	}
	for _, c := range cases {
		assert.Equal(t, c.ack, HeartbeatAck(c.reply), "%q", c.reply)
	}
}

func TestParseHeartbeatCommand(t *testing.T) {
	cases := []struct {
		text, action, spec, err string
	}{
		{"/heartbeat", "", "", ""},
		{"/heartbeat off", HeartbeatOff, "", ""},
		{"/heartbeat NOW", HeartbeatNow, "", ""},
		{"/heartbeat every 30m", HeartbeatSet, "every 30m", ""},
		{"/heartbeat every 30m 08:00-22:00 Europe/Berlin", HeartbeatSet, "every 30m 08:00-22:00 Europe/Berlin", ""},
		{"/heartbeat 2h 22:00-06:00", HeartbeatSet, "every 2h 22:00-06:00", ""},
		{"/heartbeat every 1m", "", "", "every must be from 5m"},
		{"/heartbeat sometimes", "", "", "/heartbeat:"},
	}
	for _, c := range cases {
		p := ParseMessage(c.text, ParseOptions{})
		require.Equal(t, CommandHeartbeat, p.Command, c.text)
		if c.err != "" {
			assert.Contains(t, p.Error, c.err, c.text)
			continue
		}
		assert.Empty(t, p.Error, c.text)
		assert.Equal(t, c.action, p.HeartbeatAction, c.text)
		if c.spec != "" {
			require.NotNil(t, p.Heartbeat, c.text)
			assert.Equal(t, c.spec, p.Heartbeat.String(), c.text)
		}
	}
	assert.Equal(t, CommandName(""), ParseMessage("/heartbeats are nice", ParseOptions{}).Command, "a look-alike is text")
}

func TestUsageFooterAndTotals(t *testing.T) {
	u := Usage{InputTokens: 1200, OutputTokens: 80}
	assert.Equal(t, "", UsageFooter(u, UsageOff))
	assert.Equal(t, "— 1200 in · 80 out tokens", UsageFooter(u, UsageTokens))
	assert.Equal(t, "— 1200 in · 80 out tokens · cost not reported by the provider", UsageFooter(u, UsageFull))
	u.CostUSD, u.HasCost = 0.01234, true
	assert.Equal(t, "— 1200 in · 80 out tokens · $0.0123", UsageFooter(u, UsageFull))
	assert.Equal(t, "This session: 3 answered turn(s), 1200 in · 80 out tokens · $0.0123. Footer: off (/usage off|tokens|full).\nWhat is left of today's budgets: /budget", RenderUsageTotals(u, 3, ""))

	withCost := Usage{InputTokens: 1, CostUSD: 0.5, HasCost: true}
	assert.True(t, Usage{}.Add(withCost).HasCost, "nothing plus a known cost is known")
	assert.False(t, withCost.Add(Usage{InputTokens: 5}).HasCost, "a step without a cost makes the sum unknown")
}

func TestToolLineIsOneShortLine(t *testing.T) {
	line := ToolLine(ToolCall{Name: "search", Arguments: `{"q":"a\nb"}`}, ToolResult{Output: strings.Repeat("result ", 100)})
	assert.NotContains(t, line, "\n")
	assert.LessOrEqual(t, len([]rune(line)), maxToolLineRunes)
	assert.True(t, strings.HasPrefix(line, `🔧 search {"q":"a\nb"} → result`), line)
	assert.Contains(t, ToolLine(ToolCall{Name: "fail", Arguments: "{}"}, ToolResult{Output: "boom", IsError: true}), "🔧 fail ✗ boom")
}

func TestHelpSaysWhatIsOpenToTheSender(t *testing.T) {
	for _, owner := range []bool{false, true} {
		help := RenderHelp(owner, ClosedToMembers(nil))
		for _, cmd := range []string{"/help", "/whoami", "/usage", "/context", "/compact", "/think", "/verbose", "/export", "/status", "/stop", "/new"} {
			assert.Contains(t, help, cmd)
		}
		assert.Equal(t, owner, strings.Contains(help, "/send on|off —"))
		assert.Contains(t, help, "/budget — what is left of today's budgets")
		assert.Contains(t, help, "/voice [on|off] — also send this chat's replies as voice notes")
		assert.Equal(t, owner, strings.Contains(help, "/budget raise N — add N tokens"), "owners see how to raise it")
		assert.Equal(t, !owner, strings.Contains(help, "Only owners raise /think, /verbose on, /usage full, /queue debounce, cap and drop here"), help)
	}
	assert.NotContains(t, RenderHelp(false, ClosedToMembers(MemberSettingNames)), "Only owners raise")
	assert.Contains(t, RenderHelp(false, ClosedToMembers([]string{MemberThink, MemberQueue})), "Only owners raise /verbose on, /usage full here")
}

func TestRenderHeartbeatInfo(t *testing.T) {
	assert.Contains(t, RenderHeartbeatInfo(HeartbeatInfo{}, ""), "No heartbeat")
	info := HeartbeatInfo{On: true, Paused: true, Note: "paused by ops\nfor the night", Spec: "every 30m", NextRun: time.Date(2026, 1, 1, 8, 30, 0, 0, time.UTC)}
	assert.Equal(t, "Heartbeat: every 30m (paused: paused by ops for the night); next at 08:30 UTC. Last: none yet.", RenderHeartbeatInfo(info, "none yet"))
}

func TestDirectivesOverEarlierOnes(t *testing.T) {
	high, low, on := ThinkHigh, ThinkLow, true
	first := Directives{Think: &high, Verbose: &on}
	later := Directives{Think: &low}
	got := later.Over(&first)
	assert.Equal(t, ThinkLow, *got.Think, "the later message's wins")
	assert.True(t, *got.Verbose, "what it leaves unset is the earlier one's")
	assert.Nil(t, got.Model)
	assert.Equal(t, later, later.Over(nil))
}
