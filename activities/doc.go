// Package activities performs every side effect the session workflow asks
// for: loading a session's settings, running an agent turn against a model
// (refreshing the typing indicator from its heartbeat loop), delivering reply
// chunks and setting reactions through the platform adapters.
//
// Activities are at-least-once, so each one is safe to run again with the
// same input: deliveries carry an idempotency key and reactions are "set to
// state S". Failures come back as temporal.ApplicationErrors whose type says
// what failed and whether retrying can help; retries themselves are Temporal's
// (model and platform clients must not retry on their own).
//
// This package must not import the workflows package or keep conversation
// state in memory: everything durable belongs to the workflow or the store.
package activities
