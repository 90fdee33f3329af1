// Package gateway is the gateway's side of Temporal and the list of the
// platforms replyflow speaks.
//
// NewChain builds the gateway's inbound chain, the Sink and FeedbackSink
// the platform adapters hand their events to, from small stages: Drain
// (a stopping gateway refuses new events), Counted (replyflow_inbound),
// the Limiter and the Ingress. The Ingress hands inbound messages and
// feedback to session workflows with SignalWithStart; an adapter acks its
// platform only after Accept returned nil. The Limiter stands in front
// of it: per-sender, per-chat and new-session token buckets drop what a
// stranger could flood the gateway with before it costs a Temporal
// action and a model turn (an adapters.RateLimitedError, which the
// adapters ack as handled; the sender is told once per window). Status
// answers GET /healthz with each platform's connection state. Sessions
// lists the running sessions of a channel through Temporal visibility (by
// workflow ID, so a session no worker ran yet is found too), for a
// platform that fetches what a dead gateway missed from its history
// (Discord's catch-up).
//
// Platforms is the registry: each entry is an adapters.Platform, which
// gives its settings (the value itself, filled from REPLYFLOW_* variables),
// its gateway side (Serve: routes on the gateway's mux, its own connection
// in the background) and its worker side (Outbound). The commands loop
// over it and name no platform. Adding one, say Slack, is its package
// adapters/slack with a Platform type, and one line here:
//
//	func Platforms() []adapters.Platform {
//		return []adapters.Platform{
//			&webchat.Platform{},
//			&telegram.Platform{},
//			&slack.Platform{}, // the new line
//		}
//	}
//
// plus its rows in docs/configuration.md's table, which a test checks.
package gateway
