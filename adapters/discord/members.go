package discord

import (
	"context"

	"github.com/bwmarrin/discordgo"
)

// Member counts feed the engagement ladder: a guild of five where one
// person speaks is a group, not a conversation with that person. The
// gateway attaches the guild's count to each guild message it hands on
// (adapters/internal/members caches it a minute per guild); a DM has none
// (the session knows a DM is two). Discord counts a guild, not a channel:
// a private channel of two in a big guild is counted as the guild, which
// errs towards the reserved side. The count is approximate and includes
// other bots, so it is marked Truncated: a floor, not ground truth.

// guildMembers asks Discord for a guild's approximate member count.
func guildMembers(s *discordgo.Session) func(ctx context.Context, guild string) (int, error) {
	return func(ctx context.Context, guild string) (int, error) {
		g, err := s.GuildWithCounts(guild, discordgo.WithContext(ctx))
		if err != nil {
			return 0, err
		}
		return g.ApproximateMemberCount, nil
	}
}
