package pipeline

import (
	"fmt"
	"strings"
)

// QueueMode decides what happens to a message that arrives while a turn is
// running.
type QueueMode string

const (
	// QueueFollowup runs one turn per queued batch, in order.
	QueueFollowup QueueMode = "followup"
	// QueueCollect runs one turn for everything queued.
	QueueCollect QueueMode = "collect"
	// QueueSteer injects the message into the running turn at its next
	// model step; if none comes, it falls back to followup.
	QueueSteer QueueMode = "steer"
	// QueueSteerBacklog steers and also queues the message.
	QueueSteerBacklog QueueMode = "steer-backlog"
	// QueueInterrupt cancels the running turn and starts one for the
	// new message.
	QueueInterrupt QueueMode = "interrupt"
)

// QueueModes lists every mode, for help texts and validation.
var QueueModes = []QueueMode{QueueFollowup, QueueCollect, QueueSteer, QueueSteerBacklog, QueueInterrupt}

// DropPolicy decides what goes when the queue is at its cap.
type DropPolicy string

const (
	// DropOld drops the oldest queued batch.
	DropOld DropPolicy = "old"
	// DropNew drops the arriving batch.
	DropNew DropPolicy = "new"
	// DropSummarize drops the oldest batch but keeps a one-line summary
	// of it for the next turn's prompt.
	DropSummarize DropPolicy = "summarize"
)

// DropPolicies lists every policy.
var DropPolicies = []DropPolicy{DropOld, DropNew, DropSummarize}

// ParseQueueMode accepts a mode name, case-insensitively.
func ParseQueueMode(s string) (QueueMode, error) {
	for _, m := range QueueModes {
		if strings.EqualFold(s, string(m)) {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown queue mode %q; use one of %s", s, joinNames(QueueModes))
}

// ParseDropPolicy accepts a policy name, case-insensitively.
func ParseDropPolicy(s string) (DropPolicy, error) {
	for _, p := range DropPolicies {
		if strings.EqualFold(s, string(p)) {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown drop policy %q; use one of %s", s, joinNames(DropPolicies))
}

func joinNames[T ~string](names []T) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = string(n)
	}
	return strings.Join(parts, ", ")
}

// QueueSettings is how a session (or one message) queues and debounces.
type QueueSettings struct {
	Mode     QueueMode  `json:"mode"`
	Debounce Duration   `json:"debounce"`
	Cap      int        `json:"cap"`
	Drop     DropPolicy `json:"drop"`
}

// QueuePatch is a partial QueueSettings, as a /queue directive gives it;
// nil fields keep their value.
type QueuePatch struct {
	Mode     *QueueMode  `json:"mode,omitempty"`
	Debounce *Duration   `json:"debounce,omitempty"`
	Cap      *int        `json:"cap,omitempty"`
	Drop     *DropPolicy `json:"drop,omitempty"`
}

// Apply returns s with the patch's fields set.
func (p *QueuePatch) Apply(s QueueSettings) QueueSettings {
	if p == nil {
		return s
	}
	if p.Mode != nil {
		s.Mode = *p.Mode
	}
	if p.Debounce != nil {
		s.Debounce = *p.Debounce
	}
	if p.Cap != nil {
		s.Cap = *p.Cap
	}
	if p.Drop != nil {
		s.Drop = *p.Drop
	}
	return s
}

// Describe renders settings for a person: "collect, debounce 2s, cap 25, drop old".
func (s QueueSettings) Describe() string {
	return fmt.Sprintf("%s, debounce %s, cap %d, drop %s", s.Mode, s.Debounce, s.Cap, s.Drop)
}

// Merge returns p with q's set fields over it; either may be nil.
func (p *QueuePatch) Merge(q *QueuePatch) *QueuePatch {
	out := QueuePatch{}
	for _, src := range []*QueuePatch{p, q} {
		if src == nil {
			continue
		}
		if src.Mode != nil {
			out.Mode = src.Mode
		}
		if src.Debounce != nil {
			out.Debounce = src.Debounce
		}
		if src.Cap != nil {
			out.Cap = src.Cap
		}
		if src.Drop != nil {
			out.Drop = src.Drop
		}
	}
	return &out
}
