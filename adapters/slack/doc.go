// Package slack is replyflow's Slack adapter, shaped like the Telegram
// one. It is the only code in replyflow that imports
// github.com/slack-go/slack; it must not import Temporal or the workflows,
// and is reached through the adapters contract only.
//
// How the adapter behaves with Slack (acks, keys, redeliveries,
// errors, reactions, catch-up) is told in docs/slack.md.
package slack
