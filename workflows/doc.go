// Package workflows holds what the session workflows share with each other
// and with the rest of replyflow: the names of the workflow types, signals,
// queries, updates, search attributes and metric series (names.go,
// metrics.go); the durable state a session carries across continue-as-new
// and the views its query answers (state.go, parts_state.go,
// snapshot.go); the releases a worker serves (releases.go); and the
// heartbeat tick workflow that a Schedule starts (heartbeat_tick.go).
//
// The session itself lives in workflows/session (the live release, type
// chat-session). Code here must stay deterministic like it: no I/O, no time.Now, no goroutines, no dependence on map order,
// and no import of adapters, activities, platform or model SDKs (an
// architecture test, imports_test.go, keeps that honest for every package
// under workflows).
package workflows
