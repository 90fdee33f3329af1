// Package devserver holds the flags replyflow gives `temporal server
// start-dev`, for `replyflow dev`, the integration tests and the benchmark
// and chaos programs alike: the search attributes the session workflow
// publishes, and dynamic config that suits a dev server's single history
// shard. It starts nothing itself.
package devserver

import "github.com/replyflow/replyflow/workflows"

// dynamicConfig is set on every dev server replyflow runs.
var dynamicConfig = []string{
	// Activities start on the worker that scheduled them, skipping a
	// round trip through matching for every activity of a turn.
	"system.enableActivityEagerExecution=true",
	// A history shard reads its new tasks at most 20 times a second by
	// default. A cluster spreads sessions over hundreds of shards; the dev
	// server has one, so with a few sessions busy every workflow task,
	// timer and search attribute would wait up to 50 ms for the next read.
	"history.transferProcessorMaxPollRPS=1000",
	"history.timerProcessorMaxPollRPS=1000",
	"history.visibilityProcessorMaxPollRPS=1000",
	// A shard reads the timers due within its max time shift ahead of
	// time and fires them from memory; the reads happen about once per
	// shift, so with the default (1 s) a timer due in 300 ms (a debounce
	// window, a reaction's clear) fires up to a second late. At 100 ms
	// a timer fires within about 100 ms of its due time, for ten times
	// the reads of an idle shard: nothing on a dev server's one shard.
	`history.timerProcessorMaxTimeShift="100ms"`,
}

// DynamicConfig is the dynamic config above, as key=value, for a real
// server's dynamic config file (cmd/internal/harness's cluster).
func DynamicConfig() []string { return append([]string(nil), dynamicConfig...) }

// Args are the flags to add to `temporal server start-dev`.
func Args() []string {
	var args []string
	for _, v := range dynamicConfig {
		args = append(args, "--dynamic-config-value", v)
	}
	for _, sa := range workflows.SearchAttributes() {
		args = append(args, "--search-attribute", sa)
	}
	return args
}
