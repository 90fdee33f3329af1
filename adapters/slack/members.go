package slack

import (
	"context"

	"github.com/slack-go/slack"
)

// Member counts feed the engagement ladder: a channel of five where one
// person speaks is a group, not a conversation with that person. The
// gateway attaches a count to each channel message it hands on
// (adapters/internal/members caches it a minute per channel, so each
// channel costs at most one conversations.info a minute, Tier 3); the
// session keeps the newest.

// ConversationMembers asks conversations.info for a channel's number of
// members: ReceiverConfig.CountMembers for an API client.
func ConversationMembers(api *slack.Client) func(ctx context.Context, channel string) (int, error) {
	return func(ctx context.Context, channel string) (int, error) {
		info, err := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: channel, IncludeNumMembers: true})
		if err != nil {
			return 0, classify("conversations.info", err)
		}
		return info.NumMembers, nil
	}
}
