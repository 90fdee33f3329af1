// Package codec encrypts what replyflow stores in Temporal. Every payload
// (messages, replies, tool arguments and results, query answers, the UI's
// summaries and details, and, through FailureConverter, failure messages
// and stack traces, local activities' and causes' included) is sealed
// with AES-256-GCM before it leaves the process, and opened when it comes back. It also serves the same codec
// over HTTP (Handler), so the Temporal UI and CLI can show the payloads to
// an operator who holds the token.
//
// Blobs seals, with the same keys, what the store keeps outside
// Temporal of users' files (their bytes and transcripts).
//
// Keys come from REPLYFLOW_CODEC_KEYS (ParseKeys): the first encrypts, all
// of them decrypt, chosen by the key ID each payload carries, so a key is
// rotated by putting a new one in front. Payloads recorded before
// encryption was turned on pass through Decode unchanged.
//
// It must not touch what Temporal itself reads (workflow IDs, search
// attributes, signal, query and activity names, task queues: keep user
// text out of those), must not depend on workflows, activities or adapters,
// and must never log, print or put into an error any key material.
package codec
