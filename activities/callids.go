package activities

import (
	"fmt"

	"github.com/replyflow/replyflow/pipeline"
)

// uniqueCallIDs gives each of a model step's calls an ID that is non-empty
// and unique within the turn: not another call's of this step, nor any of
// the turn's earlier rounds. Some OpenAI-compatible providers (Gemini's
// compatibility endpoint, LM Studio) return empty or repeated IDs, and the
// session matches approvals, the stored results and the HTTP tool's
// Idempotency-Key by call ID: two calls of one ID would be approved,
// answered and replayed as one.
//
// A provider's ID that is already non-empty and unique is kept, so that
// the provider reads back its own ID; the first of repeated ones is kept
// too. The others become rf_<step>_<index> (with a further _<n> if a
// provider already used that), deterministic and in the alphabet
// Anthropic allows for tool_use IDs. Later steps send back the IDs of
// req.Rounds, so a rewritten ID is the one both the assistant's calls and
// the tool results carry. It returns the indexes of the calls it
// rewrote.
func uniqueCallIDs(step int, rounds []pipeline.ToolRound, calls []pipeline.ToolCall) []int {
	taken := map[string]bool{}
	for _, r := range rounds {
		for _, c := range r.Calls {
			taken[c.ID] = true
		}
		for _, res := range r.Results {
			taken[res.CallID] = true
		}
	}
	var rewrite []int
	for i, c := range calls {
		if c.ID == "" || taken[c.ID] {
			rewrite = append(rewrite, i)
			continue
		}
		taken[c.ID] = true
	}
	// The generated IDs avoid every kept one, whichever call holds it.
	for _, i := range rewrite {
		id := fmt.Sprintf("rf_%d_%d", step, i)
		for n := 2; taken[id]; n++ {
			id = fmt.Sprintf("rf_%d_%d_%d", step, i, n)
		}
		taken[id] = true
		calls[i].ID = id
	}
	return rewrite
}
