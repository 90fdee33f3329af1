// Package discord is replyflow's Discord adapter, shaped like the Slack
// and Telegram ones. It is the only code in replyflow that imports
// github.com/bwmarrin/discordgo; it must not import Temporal or the
// workflows, and is reached through the adapters contract only. The fake
// Discord for tests is discordtest.
//
// How the adapter behaves with Discord (acks, keys, redeliveries,
// errors, reactions, catch-up) is told in docs/discord.md.
package discord
