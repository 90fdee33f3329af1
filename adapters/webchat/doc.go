// Package webchat is replyflow's local web chat: a small chat platform of its
// own that the gateway serves, and the adapter that connects it.
//
// The platform side (Server) has a user API and a bot API:
//
//	POST /api/chats/{chat}/messages     a user posts; 202 once Temporal accepted it,
//	                                    429 + Retry-After when the gateway's rate limits dropped it
//	POST /api/chats/{chat}/uploads      a user posts with one file (multipart, REPLYFLOW_MEDIA):
//	                                    kept in the store, then accepted as a message;
//	                                    409 when message_id names another message (upload.go, keep)
//	POST /api/chats/{chat}/actions      a user presses a button
//	GET  /api/chats/{chat}/events       Server-Sent Events: message, reaction, typing
//	GET  /api/chats/{chat}/history      what the chat shows now, from the store
//	GET  /api/me                        who the caller is signed in as
//	GET  /login?t=...                   a one-time login link: sets the sign-in cookie
//	POST /logout                        clears it
//	GET  /                              the embedded page, using only the calls above
//	POST /bot/chats/{chat}/messages     the bot sends (Bearer token, idempotency key)
//	PUT  /bot/chats/{chat}/messages/{message}/reaction
//	POST /bot/chats/{chat}/typing
//
// Who speaks on the user API is, in token mode (the default), what a token
// signed with REPLYFLOW_WEBCHAT_AUTH_KEY says (token.go): a Bearer token or
// the cookie a login link sets; never the body. A token reaches the chats
// it names, else only its sender's own chat (chat ID = sender ID), or
// every chat when issued with --all-chats. In none mode the body's
// sender_id says, so that mode is for a loopback address only, and answers
// only requests addressed to a loopback name (package hostcheck).
//
// Client is the outbound adapter the worker uses to call the bot API, so the
// worker and the gateway can run as separate processes. Any program can
// connect a custom platform the same way: post user messages to the user API
// and read what the bot does from the event stream.
//
// What each chat shows (the users' messages, the bot's as last edited,
// the reactions) is kept in the store (REPLYFLOW_STORE_DSN; ChatLog), so a
// page reloaded after a restart, or served by another gateway, shows the
// chat so far: the page opens its event stream, then reads the history,
// then applies what the stream brought meanwhile. The store also holds the
// idempotency keys of bot sends, so a send retried after a restart is
// shown once. Bot messages are Markdown, rendered to sanitized HTML
// (markdown.go). What lives only in the gateway's memory, and so is lost
// when it restarts: the open streams, the recent event backlog replayed to
// a stream reconnecting with Last-Event-ID (and to ?replay=all), and the
// login links used. The conversation itself lives in Temporal.
//
// This package must not import Temporal or the workflow code: it hands
// inbound messages to an adapters.Sink.
package webchat
