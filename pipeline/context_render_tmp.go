package pipeline

import "fmt"

// RenderContext is the /context answer. (Placeholder until the
// transcript branch's renderer lands.)
func RenderContext(r ContextReport, req ContextRequest, model string) string {
	return fmt.Sprintf("Next prompt for %s: persona %d tokens, system %d tokens; transcript %d of %d messages (%d tokens) within a budget of %d; observed %d message(s) (%d tokens); tools: %d.",
		model, r.PersonaTokens, r.SystemTokens, r.TranscriptMessages, r.TranscriptStored, r.TranscriptTokens, r.Budget, req.Observed, req.ObservedTokens, len(r.Tools))
}
