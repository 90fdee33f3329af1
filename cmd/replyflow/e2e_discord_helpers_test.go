package main

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/discord"
	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/pipeline"
)

// People in the Discord tests.
const (
	discordAlice = "100000000000000011"
	discordBob   = "100000000000000012"
)

// discordStack is a gateway connected to a fake Discord, whose worker
// posts to the same fake, and a guild of its own there.
type discordStack struct {
	*stack
	fake  *discordtest.Server
	guild string
}

// startDiscordStack runs a gateway against a new fake Discord, whose
// worker posts to it, and returns once the gateway is connected.
func startDiscordStack(t *testing.T, cfg Config) *discordStack {
	cfg, fake := withDiscord(t, cfg)
	s := &discordStack{stack: startStack(t, cfg), fake: fake, guild: newSnowflake()}
	// Five members: Alice speaking alone is still in a group.
	fake.AddGuild(discordtest.Guild{ID: s.guild, Members: 5})
	s.waitDiscordUp()
	return s
}

// withDiscord points cfg at a new fake Discord whose bot has an ID of its
// own: the Temporal server outlives the fakes, and the catch-up after a
// READY lists every running session of its bot, which must be this
// test's alone.
func withDiscord(t *testing.T, cfg Config) (Config, *discordtest.Server) {
	fake := discordtest.New(discordtest.Options{BotID: newSnowflake()})
	t.Cleanup(fake.Close)
	registerSecret("discord bot token", fake.Token)
	cfg = cfg.withOwnPlatforms()
	d := platformOf[*discord.Platform](cfg)
	d.Token, d.APIURL = fake.Token, fake.APIURL()
	require.NoError(t, cfg.validate())
	return cfg, fake
}

// newSnowflake is an ID no other test (nor an earlier run) uses: now's
// snowflake plus a sequence number in its low bits.
func newSnowflake() string {
	base, _ := strconv.ParseUint(discordtest.SnowflakeAt(time.Now()), 10, 64)
	return strconv.FormatUint(base+uint64(queueSeq.Add(1)), 10)
}

// waitDiscordUp waits until the gateway is connected to Discord and
// carries a session.
func (s *discordStack) waitDiscordUp() {
	s.t.Helper()
	require.Eventually(s.t, func() bool {
		return s.health()[discord.Channel].State == adapters.StateUp && s.fake.Connections() == 1
	}, time.Minute, 20*time.Millisecond, "the gateway never connected to Discord: %+v", s.health())
}

func waitForDiscord(t *testing.T, fake *discordtest.Server, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, fake.WaitFor(ctx, cond), "waiting for %s", what)
}

// newChannel adds a text channel of its own to the stack's guild.
func (s *discordStack) newChannel() string {
	id := newSnowflake()
	s.fake.AddChannel(discordtest.Channel{ID: id, Type: discordtest.GuildText, GuildID: s.guild})
	return id
}

// newThread adds a public thread in the parent channel.
func (s *discordStack) newThread(parent string) string {
	id := newSnowflake()
	s.fake.AddChannel(discordtest.Channel{ID: id, Type: discordtest.PublicThread, GuildID: s.guild, ParentID: parent})
	return id
}

// key is the session of a channel (a thread's parent) of the bot.
func (s *discordStack) key(channel string) pipeline.SessionKey {
	return pipeline.SessionKey{Channel: discord.Channel, Account: s.fake.BotID, Chat: channel}
}

// mention posts text as user in channel (a thread's own channel for a
// message in it) with a mention of the bot in front.
func (s *discordStack) mention(channel, user, text string) discordtest.Message {
	return s.fake.Post(discordtest.Post{Channel: channel, Author: user, Content: "<@" + s.fake.BotID + "> " + text})
}

// reactionsOn is the bot's successful reaction calls on one message, in
// order: "+emoji" for an add, "-emoji" for a removal.
func (s *discordStack) reactionsOn(channel, id string) []string {
	var out []string
	for _, c := range s.fake.Calls(discordtest.RouteReact, discordtest.RouteUnreact) {
		if c.Vars["channel"] != channel || c.Vars["message"] != id || c.Status/100 != 2 {
			continue
		}
		sign := "+"
		if c.Method == http.MethodDelete {
			sign = "-"
		}
		out = append(out, sign+c.Vars["emoji"])
	}
	return out
}

// waitCleared waits until the bot's reactions on each message went
// through ✅ and are gone.
func (s *discordStack) waitCleared(channel string, ids ...string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := s.fake.WaitFor(ctx, func() bool {
		for _, id := range ids {
			calls := s.reactionsOn(channel, id)
			if len(calls) == 0 || calls[len(calls)-1] != "-✅" || len(s.fake.Reactions(channel, id)) > 0 {
				return false
			}
		}
		return true
	})
	if err != nil {
		for _, id := range ids {
			s.t.Logf("reaction calls on %s: %v; on it now: %v", id, s.reactionsOn(channel, id), s.fake.Reactions(channel, id))
		}
		s.t.Fatalf("waiting for the reactions on %v to be cleared: %v", ids, err)
	}
}

// contents are the messages' texts, in order.
func contents(msgs []discordtest.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Content)
	}
	return out
}
