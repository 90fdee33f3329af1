package discord

import (
	"context"
	"fmt"
	"sync"

	"github.com/bwmarrin/discordgo"
)

// maxKnownPlaces bounds the places remembered; past it the oldest goes.
const maxKnownPlaces = 16384

// places finds where a channel sits. A message names only its channel
// (and guild), not whether the channel is a thread, yet a thread's
// messages belong to its parent's session. A channel's kind and parent
// never change, so each is looked up once: in discordgo's state (filled
// by GUILD_CREATE and THREAD_CREATE), else with GET /channels/{id}.
type places struct {
	session *discordgo.Session

	mu    sync.Mutex
	known map[string]Place
	order []string
}

func newPlaces(s *discordgo.Session) *places {
	return &places{session: s, known: map[string]Place{}}
}

// ofEvent is where a gateway event's channel sits: an event without a
// guild is a DM's (guild channels and threads always name their guild,
// and a bot is in no group DM), which needs no lookup.
func (p *places) ofEvent(ctx context.Context, channelID, guildID string) (Place, error) {
	if guildID == "" {
		place := Place{ChannelID: channelID, Direct: true}
		p.remember(place)
		return place, nil
	}
	return p.place(ctx, channelID, guildID)
}

// place is where channelID sits. guildHint is the guild the event named
// ("" for a DM's events, and for the REST history, which names none).
func (p *places) place(ctx context.Context, channelID, guildHint string) (Place, error) {
	p.mu.Lock()
	known, ok := p.known[channelID]
	p.mu.Unlock()
	if ok {
		return known, nil
	}
	place, ok := p.fromState(channelID)
	if !ok {
		c, err := p.session.Channel(channelID, discordgo.WithContext(ctx))
		if err != nil {
			return Place{}, fmt.Errorf("look up Discord channel %s: %w", channelID, err)
		}
		place = placeOf(c)
	}
	if place.GuildID == "" {
		place.GuildID = guildHint
	}
	p.remember(place)
	return place, nil
}

// fromState reads the channel from discordgo's state, under the state's
// lock: the state updates a known channel in place.
func (p *places) fromState(channelID string) (Place, bool) {
	st := p.session.State
	if st == nil {
		return Place{}, false
	}
	c, err := st.Channel(channelID)
	if err != nil {
		return Place{}, false
	}
	st.RLock()
	defer st.RUnlock()
	return placeOf(c), true
}

func placeOf(c *discordgo.Channel) Place {
	place := Place{ChannelID: c.ID, GuildID: c.GuildID}
	switch {
	case c.IsThread():
		place.ParentID = c.ParentID
	case c.Type == discordgo.ChannelTypeDM:
		place.Direct = true
	}
	return place
}

func (p *places) remember(place Place) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.known[place.ChannelID]; !ok {
		p.order = append(p.order, place.ChannelID)
		if len(p.order) > maxKnownPlaces {
			delete(p.known, p.order[0])
			p.order = p.order[1:]
		}
	}
	p.known[place.ChannelID] = place
}
