// Package gateway is the gateway's side of Temporal and the list of the
// platforms replyflow speaks.
//
// The Ingress hands inbound messages and feedback from the platform
// adapters to session workflows with SignalWithStart; an adapter acks its
// platform only after Accept returned nil. Status answers GET /healthz with
// each platform's connection state. Sessions lists the running sessions
// of a channel through Temporal visibility (by workflow ID, so a session
// no worker ran yet is found too), for a platform that fetches what a dead
// gateway missed from its history (Discord's catch-up).
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
// plus its rows in the README's configuration table, which a test checks.
package gateway
