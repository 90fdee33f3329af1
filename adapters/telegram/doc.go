// Package telegram is replyflow's Telegram adapter, and the reference for
// how every platform adapter is shaped. It is the only code in replyflow
// that imports github.com/go-telegram/bot.
//
// Inbound (the gateway side): a Receiver turns Bot API updates into
// pipeline.Inbound messages and pipeline.Feedback events and hands them to
// the Sink. Updates arrive by long polling (Poller, which moves the offset
// past an update only after the Sink accepted it) or by webhook
// (WebhookHandler, which answers 200 only after the Sink accepted it), so
// an update is never confirmed to Telegram before Temporal holds it. An
// update the gateway's rate limits dropped (adapters.RateLimitedError) is
// confirmed as handled, and the gateway's slow-down notice goes out
// through Receiver.Notify (adapters.Serving.Notify).
//
// Outbound (the worker side): a Client sends reply chunks as Telegram HTML
// in the inbound's topic and anchored to the user's message, paces them
// per chat, sets the reaction lifecycle with Telegram's allowed emoji,
// shows typing, and edits decided proposals. Its errors are classified
// (adapters.Error) so the activities retry the right way.
//
// Keys: the session is the chat; the thread is the forum topic
// ("topic-<id>"), else the reply chain ("reply-<message>"), else the root.
//
// This package must not import Temporal or the workflows: it is reached
// through the adapters contract only.
package telegram
