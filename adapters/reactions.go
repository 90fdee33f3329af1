package adapters

import (
	"fmt"
	"maps"
	"slices"

	"github.com/replyflow/replyflow/pipeline"
)

// ReactionOverrides reads a platform's per-state reaction setting (envconfig
// map syntax, e.g. REPLYFLOW_SLACK_REACTIONS=done:tada,error:warning): each
// key must be a lifecycle state and each value pass valid (the platform's
// rule for an emoji). Errors name the setting and come in key order.
func ReactionOverrides(setting string, m map[string]string, valid func(string) error) (map[pipeline.ReactionState]string, []error) {
	out := map[pipeline.ReactionState]string{}
	var errs []error
	for _, state := range slices.Sorted(maps.Keys(m)) {
		if _, ok := pipeline.DefaultEmoji[pipeline.ReactionState(state)]; !ok {
			errs = append(errs, fmt.Errorf("%s: unknown reaction state %q; use received, thinking, waiting_user, done or error", setting, state))
			continue
		}
		if valid != nil {
			if err := valid(m[state]); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s: %w", setting, state, err))
				continue
			}
		}
		out[pipeline.ReactionState(state)] = m[state]
	}
	return out, errs
}
