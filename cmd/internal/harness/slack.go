package harness

import "github.com/replyflow/replyflow/adapters/slack/slacktest"

// SlackVars turn Slack on against the fake, over Socket Mode, with the
// per-channel post pacing off (as Env turns Telegram's off): for Env's
// extra.
func SlackVars(fake *slacktest.Server) map[string]string {
	return map[string]string{
		"SLACK_BOT_TOKEN":     fake.BotToken,
		"SLACK_APP_TOKEN":     fake.AppToken,
		"SLACK_MODE":          "socket",
		"SLACK_API_URL":       fake.APIURL(),
		"SLACK_POST_INTERVAL": "0",
	}
}
