package pipeline

import (
	"fmt"
	"slices"
	"strings"
)

// Chat settings that raise what a chat costs, or change it for everyone in
// it, are the owners' to set: a member (a sender who is not an owner) may
// turn them down but not up, unless the operator opens one to everyone
// (REPLYFLOW_MEMBER_SETTINGS). The names below are what that setting lists.
const (
	// MemberThink opens every /think level (a higher reasoning effort
	// multiplies a step's tokens: OpenAI's reasoning_effort, Anthropic's
	// thinking budget). Closed, a member may only turn it off.
	MemberThink = "think"
	// MemberVerbose opens /verbose on (a line in the chat per tool call,
	// with its arguments). Closed, a member may only turn it off.
	MemberVerbose = "verbose"
	// MemberUsage opens /usage full (the cost of every reply shown in the
	// chat). Closed, a member may set off or tokens.
	MemberUsage = "usage"
	// MemberQueue opens /queue's debounce, cap and drop (how long
	// messages wait, how many, and whether the overflow costs a model
	// call to summarize). Closed, a member may still choose the mode
	// (what the next message does to a running turn) and reset the
	// queue to the operator's defaults.
	MemberQueue = "queue"
)

// MemberSettingNames are the names REPLYFLOW_MEMBER_SETTINGS accepts.
var MemberSettingNames = []string{MemberThink, MemberVerbose, MemberUsage, MemberQueue}

// ParseMemberSettings checks the names of REPLYFLOW_MEMBER_SETTINGS.
func ParseMemberSettings(names []string) error {
	for _, n := range names {
		if !slices.Contains(MemberSettingNames, n) {
			return fmt.Errorf("unknown setting %q: use some of %s", n, strings.Join(MemberSettingNames, ", "))
		}
	}
	return nil
}

// OwnersOnly lists, in a fixed order and as a member would type them, the
// directives of d that only an owner may give when open are the settings
// opened to members; none means a member may give them all. /model has its
// own rule (the chain and REPLYFLOW_MODEL_ALLOW) and is not judged here.
func (d Directives) OwnersOnly(open []string) []string {
	var closed []string
	if d.Think != nil && *d.Think != ThinkOff && !slices.Contains(open, MemberThink) {
		closed = append(closed, "/think "+string(*d.Think))
	}
	if d.Verbose != nil && *d.Verbose && !slices.Contains(open, MemberVerbose) {
		closed = append(closed, "/verbose on")
	}
	if d.Usage != nil && *d.Usage == UsageFull && !slices.Contains(open, MemberUsage) {
		closed = append(closed, "/usage full")
	}
	if q := d.Queue; q != nil && (q.Debounce != nil || q.Cap != nil || q.Drop != nil) && !slices.Contains(open, MemberQueue) {
		closed = append(closed, "/queue "+q.typedLimits())
	}
	return closed
}

// typedLimits renders the patch's debounce, cap and drop as they are
// written after /queue.
func (p *QueuePatch) typedLimits() string {
	var parts []string
	if p.Debounce != nil {
		parts = append(parts, "debounce:"+p.Debounce.String())
	}
	if p.Cap != nil {
		parts = append(parts, fmt.Sprintf("cap:%d", *p.Cap))
	}
	if p.Drop != nil {
		parts = append(parts, "drop:"+string(*p.Drop))
	}
	return strings.Join(parts, " ")
}

// RefuseOwnersOnly is the answer to a member whose message gives
// directives only owners may: closed is OwnersOnly's list.
func RefuseOwnersOnly(closed []string) string {
	return "⚠️ Only owners may set " + strings.Join(closed, ", ") + " in this chat; anyone may turn a setting down (/think off, /verbose off, /usage off, /queue reset)."
}

// ClosedToMembers names, for /help, the settings only owners raise when
// open are the settings opened to members.
func ClosedToMembers(open []string) []string {
	var closed []string
	for _, s := range []struct{ name, shown string }{
		{MemberThink, "/think"}, {MemberVerbose, "/verbose on"}, {MemberUsage, "/usage full"}, {MemberQueue, "/queue debounce, cap and drop"},
	} {
		if !slices.Contains(open, s.name) {
			closed = append(closed, s.shown)
		}
	}
	return closed
}
