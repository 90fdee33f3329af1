package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/replyflow/replyflow/adapters/discord"
	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/cmd/internal/harness"
	"github.com/replyflow/replyflow/pipeline"
)

// discordPlatform talks through the fake Discord: a gateway WebSocket
// that never sends an event again and a REST API whose sends honour
// enforce_nonce. Even conversations are in guild text channels, where
// the user mentions the bot; odd ones are DMs.
//
// Two things differ from the other platforms. A send carries its nonce,
// so a worker or server kill mid-delivery must create no second message:
// no duplicate is allowed. And what a dead gateway missed is never
// delivered again: the restarted gateway identifies afresh and, after its
// READY, fetches the channels of the running sessions from their
// history. A channel with no session yet is not fetched (the documented
// limit in adapters/discord), so every conversation's first message is
// sent and answered before the kills start (see opener); every later one
// must be answered, those posted while no gateway was connected too.
type discordPlatform struct {
	fake *discordtest.Server

	mu sync.Mutex
	// whileDown are the messages posted while no gateway session was
	// connected, before and after the post: only the catch-up brings them.
	whileDown map[string]bool
}

// discordGuild holds the channel conversations; 5 members, so a channel
// is a group and the user mentions the bot.
const discordGuild = "810000000000000001"

func newDiscord() *discordPlatform {
	fake := discordtest.New(discordtest.Options{})
	fake.AddGuild(discordtest.Guild{ID: discordGuild, Members: 5})
	return &discordPlatform{fake: fake, whileDown: map[string]bool{}}
}

func (d *discordPlatform) name() string           { return "discord" }
func (d *discordPlatform) env() map[string]string { return harness.DiscordVars(d.fake) }
func (d *discordPlatform) close()                 { d.fake.Close() }

// awaitGateway returns once a gateway session is connected.
func (d *discordPlatform) awaitGateway(ctx context.Context) error {
	return d.fake.WaitFor(ctx, func() bool { return d.fake.Connections() > 0 })
}

func (d *discordPlatform) say(conv, k int, token string) sent {
	channel := strconv.Itoa(820_000_000_000_000_000 + conv)
	user := strconv.Itoa(830_000_000_000_000_000 + conv)
	text := "hello " + token
	if k == 0 {
		ch := discordtest.Channel{ID: channel, Type: discordtest.DM, Recipient: user}
		if conv%2 == 0 {
			ch = discordtest.Channel{ID: channel, Type: discordtest.GuildText, GuildID: discordGuild}
		}
		d.fake.AddChannel(ch)
	}
	if conv%2 == 0 {
		text = "<@" + d.fake.BotID + "> " + text
	}
	down := d.fake.Connections() == 0
	m := d.fake.Post(discordtest.Post{Channel: channel, Author: user, Content: text})
	if down && d.fake.Connections() == 0 {
		d.mu.Lock()
		d.whileDown[m.ID] = true
		d.mu.Unlock()
	}
	return sent{chat: channel, msg: m.ID, token: token}
}

func (d *discordPlatform) answered(m sent) bool {
	for _, b := range d.fake.Sent(m.chat) {
		if strings.Contains(b.Content, m.token) {
			return true
		}
	}
	return false
}

func (d *discordPlatform) showing(m sent) string {
	return strings.Join(d.fake.Reactions(m.chat, m.msg), " ")
}

// clearMargin: a clear waits in the bot's global budget (35 calls a
// second over every channel), which the run's backlog still fills when
// the last answer comes, and a clear's local activity that waits past
// its deadline is retried on a timer, so the last clears of a full run
// come well past the default margin (docs/reliability.md has the runs).
func (d *discordPlatform) clearMargin() time.Duration { return time.Minute }

func (d *discordPlatform) waitFor(ctx context.Context, cond func() bool) error {
	return d.fake.WaitFor(ctx, cond)
}

func (d *discordPlatform) sends() int {
	n := 0
	for _, c := range d.fake.Calls(discordtest.RouteSend) {
		if c.Status == 200 {
			n++
		}
	}
	return n
}

func (d *discordPlatform) posted() int { return d.sends() }

func (d *discordPlatform) session(chat string) pipeline.SessionKey {
	return pipeline.SessionKey{Channel: discord.Channel, Account: d.fake.BotID, Chat: chat}
}

// tally counts the bot's messages with the same content in one channel:
// what the users see twice. None is explained: a retried send carries the
// nonce of the first, which Discord answers with the message it already
// made. Its figures are those retries (sends answered 200 beyond the
// messages made), the READYs (each a fresh session, followed by a
// catch-up) and the messages posted while no gateway was connected.
func (d *discordPlatform) tally(kills []kill, _ string, rep *platformReport) {
	rep.strict = "a retried send carries its nonce, enforced"
	channels := map[string]bool{}
	for _, c := range d.fake.Calls(discordtest.RouteSend) {
		channels[c.Vars["channel"]] = true
	}
	made := 0
	for channel := range channels {
		firstAt := map[string]time.Time{}
		for _, m := range d.fake.Sent(channel) {
			made++
			first, seen := firstAt[m.Content]
			if !seen {
				firstAt[m.Content] = m.Timestamp
				continue
			}
			rep.duplicates++
			rep.problems = append(rep.problems, fmt.Sprintf("channel %s got %q twice (first at %s, again at %s; %s)",
				channel, firstLine(m.Content), first.Format(timeFormat), m.Timestamp.Format(timeFormat), nearKills(kills, first)))
		}
	}
	d.mu.Lock()
	down := len(d.whileDown)
	d.mu.Unlock()
	rep.figures = append(rep.figures,
		fmt.Sprintf("retries the nonce caught %d (sends answered with the message already made)", d.sends()-made),
		fmt.Sprintf("gateway READYs           %d (each a fresh session, then a catch-up from history)", len(d.fake.Identifies())),
		fmt.Sprintf("posted, no gateway up    %d (reached the bot only through a catch-up)", down))
}

// why tells whether an unanswered message was posted while no gateway
// was connected, and whether its channel's history was read after it.
func (d *discordPlatform) why(m sent) string {
	d.mu.Lock()
	down := d.whileDown[m.msg]
	d.mu.Unlock()
	when := "posted while a gateway session was connected"
	if down {
		when = "posted while no gateway session was connected"
	}
	posted, _ := d.fake.Message(m.chat, m.msg)
	reads := 0
	for _, c := range d.fake.Calls(discordtest.RouteHistory) {
		if c.Vars["channel"] == m.chat && c.At.After(posted.Timestamp) {
			reads++
		}
	}
	return fmt.Sprintf("%s; its channel's history was read %d times after it", when, reads)
}
