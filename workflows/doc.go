// Package workflows holds the session workflow: one long-lived Temporal
// workflow per conversation, which owns everything durable about it (seen
// message IDs, the queue, the running turn, reaction state and its scheduled
// clears, the delivery ledger) and asks activities for every side effect.
//
// Workflow code here must stay deterministic: no I/O, no time.Now (use
// workflow.Now), no native goroutines (workflow.Go only), no dependence on map
// iteration order, and no import of adapters, activities, platform or model
// SDKs. It calls activities by the names in package pipeline. An
// architecture test (imports_test.go) keeps the import rule honest.
package workflows
