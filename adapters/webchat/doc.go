// Package webchat is replyflow's local web chat: a small chat platform of its
// own that the gateway serves, and the adapter that connects it.
//
// The platform side (Server) has a user API and a bot API:
//
//	POST /api/chats/{chat}/messages     a user posts; 202 once Temporal accepted it,
//	                                    429 + Retry-After when the gateway's rate limits dropped it
//	GET  /api/chats/{chat}/events       Server-Sent Events: message, reaction, typing
//	GET  /                              the embedded page, using only the two above
//	POST /bot/chats/{chat}/messages     the bot sends (Bearer token, idempotency key)
//	PUT  /bot/chats/{chat}/messages/{message}/reaction
//	POST /bot/chats/{chat}/typing
//
// Client is the outbound adapter the worker uses to call the bot API, so the
// worker and the gateway can run as separate processes. Any program can
// connect a custom platform the same way: post user messages to the user API
// and read what the bot does from the event stream.
//
// What lives only in the gateway's memory, and so is lost when it restarts:
// the recent event backlog replayed to reconnecting streams, and the
// idempotency keys of recent bot sends. Durable state lives in Temporal.
//
// This package must not import Temporal or the workflow code: it hands
// inbound messages to an adapters.Sink.
package webchat
