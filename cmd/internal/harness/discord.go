package harness

import "github.com/replyflow/replyflow/adapters/discord/discordtest"

// DiscordVars turn Discord on against the fake: its REST API (GET
// /gateway there names the fake's WebSocket), the bot token and the
// application, for Env's extra.
func DiscordVars(fake *discordtest.Server) map[string]string {
	return map[string]string{
		"DISCORD_TOKEN":          fake.Token,
		"DISCORD_API_URL":        fake.APIURL(),
		"DISCORD_APPLICATION_ID": fake.ApplicationID,
	}
}
