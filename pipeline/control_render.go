package pipeline

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// RenderHelp is the /help answer: what the bot understands here, for
// this sender (owners see the commands only they may use).
func RenderHelp(owner bool, closed []string) string {
	lines := []string{
		"Commands (send one as a message of its own):",
		"/help — this list",
		"/whoami — who you are here, and whether an owner",
		"/status — the session: model, queue, last turn, heartbeat",
		"/stop — stop the running answer and drop what waits",
		"/new or /reset — start a new conversation",
		"/model [provider/model | default] — the model",
		"/queue [mode] [debounce:2s] [cap:25] [drop:old|new|summarize] — how messages wait",
		"/think off|low|medium|high — reasoning effort",
		"/verbose on|off — show tool calls as short lines",
		"/usage [off|tokens|full] — a usage footer under each reply; alone: this session's totals",
		"/budget — what is left of today's budgets: this chat's, yours, the agent's",
		"/voice [on|off] — also send this chat's replies as voice notes (in a group, owners switch it)",
		"/context — what the next prompt holds",
		"/compact [focus] — summarize the conversation and go on from the summary",
		"/export — the conversation as a Markdown document",
		"/approve <id>, /reject <id> — decide a proposal",
	}
	if owner {
		lines = append(lines,
			"Owners only:",
			"/activation mention|smart|gated|always — when the bot answers in groups",
			"/send on|off — unmute or mute every reply in this chat",
			"/heartbeat every 30m [08:00-22:00] [time zone] | off | now — the checklist heartbeat",
			"/budget raise N — add N tokens (50000, 50k) or dollars ($2) to this chat's budget for today",
		)
	} else {
		lines = append(lines, "Owners may also use /activation, /send, /heartbeat and /budget raise.")
		if len(closed) > 0 {
			lines = append(lines, "Only owners raise "+strings.Join(closed, ", ")+" here; anyone may turn them down.")
		}
	}
	lines = append(lines, "", "/think, /verbose, /model, /queue and /usage also work inside a message, for that message's answer only.")
	return strings.Join(lines, "\n")
}

// RenderWhoami is the /whoami answer.
func RenderWhoami(who string, owner bool) string {
	if owner {
		return "You are " + who + " (an owner of this agent)."
	}
	return "You are " + who + " (not an owner)."
}

// UsageFooter is the line under a reply for the usage mode: "" for off
// (or nothing to show).
func UsageFooter(u Usage, mode UsageMode) string {
	if mode != UsageTokens && mode != UsageFull {
		return ""
	}
	line := fmt.Sprintf("— %d in · %d out tokens", u.InputTokens, u.OutputTokens)
	if mode == UsageFull {
		if u.HasCost {
			line += fmt.Sprintf(" · $%.4f", u.CostUSD)
		} else {
			line += " · cost not reported by the provider"
		}
	}
	return line
}

// RenderUsageTotals is the answer to /usage alone.
func RenderUsageTotals(total Usage, turns int, mode UsageMode) string {
	if mode == "" {
		mode = UsageOff
	}
	text := fmt.Sprintf("This session: %d answered turn(s), %d in · %d out tokens", turns, total.InputTokens, total.OutputTokens)
	if total.HasCost {
		text += fmt.Sprintf(" · $%.4f", total.CostUSD)
	}
	return text + ". Footer: " + string(mode) + " (/usage off|tokens|full).\nWhat is left of today's budgets: /budget"
}

// MaxHeartbeatAckRunes is how much a heartbeat reply may say besides
// HEARTBEAT_OK and still be an acknowledgement, recorded and not sent.
const MaxHeartbeatAckRunes = 300

// HeartbeatAck is true when a heartbeat turn's reply is an
// acknowledgement: HEARTBEAT_OK at its start or end, with at most
// MaxHeartbeatAckRunes besides, or nothing to deliver at all.
func HeartbeatAck(reply string) bool {
	text, deliver := NormalizeReply(reply)
	if !deliver {
		return true
	}
	trimmed := strings.TrimSpace(reply)
	if text == trimmed { // no token was stripped
		return false
	}
	return utf8.RuneCountInString(text) <= MaxHeartbeatAckRunes
}

// RenderHeartbeatPrompt is a heartbeat turn's user text: the checklist,
// and how to answer when nothing needs attention.
func RenderHeartbeatPrompt(checklist string, scheduledAt time.Time) string {
	return "**[HEARTBEAT — scheduled check, not a message from a human]**\n" +
		"Time: " + scheduledAt.UTC().Format(time.RFC3339) + "\n" +
		"Go through the checklist below. If something needs the people in this chat, write to them about it. " +
		"If nothing needs attention, reply " + HeartbeatToken + " and nothing else.\n\n" +
		"Checklist:\n" + checklist
}

// maxToolLineRunes bounds one /verbose line.
const maxToolLineRunes = 160

// ToolLine is the /verbose line of one tool call and its result.
func ToolLine(call ToolCall, res ToolResult) string {
	args := oneLine(call.Arguments)
	if args == "{}" {
		args = ""
	}
	out := oneLine(res.Output)
	mark := "→"
	if res.IsError {
		mark = "✗"
	}
	line := "🔧 " + call.Name
	if args != "" {
		line += " " + cutRunes(args, 60)
	}
	return cutRunes(line+" "+mark+" "+out, maxToolLineRunes)
}

// HeartbeatStatus is the heartbeat line of /status: the last tick and
// what became of it.
func HeartbeatStatus(at time.Time, outcome string) string {
	if at.IsZero() {
		return "none yet"
	}
	return at.UTC().Format("2006-01-02 15:04 MST") + ": " + outcome
}

// RenderHeartbeatInfo is the answer to /heartbeat alone.
func RenderHeartbeatInfo(info HeartbeatInfo, last string) string {
	if !info.On {
		return "No heartbeat in this chat. Owners set one with /heartbeat every 30m [08:00-22:00] [time zone]."
	}
	text := "Heartbeat: " + info.Spec
	if info.Paused {
		text += " (paused"
		if info.Note != "" {
			text += ": " + oneLine(info.Note)
		}
		text += ")"
	}
	if !info.NextRun.IsZero() {
		text += "; next at " + info.NextRun.UTC().Format("15:04 MST")
	}
	return text + ". Last: " + last + "."
}
