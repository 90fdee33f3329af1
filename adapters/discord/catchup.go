package discord

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/replyflow/replyflow/adapters"
)

// discordEpoch is where snowflakes count from: 2015-01-01 UTC, in Unix
// milliseconds.
const discordEpoch = 1420070400000

// historyPage is the most messages GET /channels/{id}/messages answers.
const historyPage = 100

// SnowflakeAt is the smallest ID Discord gives anything made at t: its
// milliseconds since Discord's epoch above 22 bits of worker and counter.
// history's after=SnowflakeAt(t)-1 answers what was posted since t.
func SnowflakeAt(t time.Time) uint64 {
	return uint64(max(t.UnixMilli()-discordEpoch, 0)) << 22
}

// snowflakeValue is an ID as a number; 0 for one that is not.
func snowflakeValue(id string) uint64 {
	n, _ := strconv.ParseUint(id, 10, 64)
	return n
}

// onReady runs on every READY, that is every fresh session: Discord
// replays what a session missed only on a RESUME, so after a READY
// whatever was posted while no session was connected exists only in the
// channels' history. It holds the lanes (so the missed messages go before
// the live ones) and starts the catch-up.
func (r *Receiver) onReady(botID string) {
	r.bot.Store(&botID)
	gen := r.lanes.hold()
	r.busy.Add(1)
	go func() {
		defer r.busy.Done()
		r.catchUp(gen)
	}()
}

// catchUp asks, for each conversation of this bot with a session running
// or closed within CatchupMaxAge, its channel and the channel's active
// threads to fetch the messages newer than its cursor
// (adapters.CatchupCursors: a running session's ReplyflowLastInboundAt,
// or its start, less catchupMargin, whose overlap the session's dedupe
// drops; a closed one's exactly), at most CatchupLimit a channel and none
// older than CatchupMaxAge, in the CatchupConversations most recently
// active conversations.
func (r *Receiver) catchUp(gen int) {
	defer r.lanes.releaseHold(gen)
	if r.cfg.Sessions == nil {
		r.logger.Warn("Discord catch-up off: the gateway cannot list running sessions, so messages posted while it was down are not fetched")
		return
	}
	var open, closed []adapters.OpenSession
	closedLister, _ := r.cfg.Sessions.(adapters.ClosedSessionLister)
	ok, err := r.retry([]any{"step", "list the Discord sessions for the catch-up"}, func(ctx context.Context) (err error) {
		if open, err = r.cfg.Sessions.OpenSessions(ctx, Channel); err != nil || closedLister == nil {
			return err
		}
		closed, err = closedLister.ClosedSessions(ctx, Channel, r.now().Add(-r.cfg.CatchupMaxAge))
		return err
	})
	if !ok {
		if r.ctx.Err() == nil {
			r.logger.Error("Discord catch-up failed: the running sessions could not be listed, so messages posted while the gateway was down are not fetched", "error", err)
		}
		return
	}
	bot := r.botID()
	floor := r.now().Add(-r.cfg.CatchupMaxAge)
	threads := map[string][]*discordgo.Channel{} // active threads by guild, asked once
	var waiting []string
	requests := map[string]fetchRequest{}
	cursors := adapters.CatchupCursors(open, closed, bot, r.tune.catchupMargin)
	chats := adapters.MostRecent(cursors, r.cfg.CatchupConversations)
	if left := len(cursors) - len(chats); left > 0 {
		r.logger.Warn("Discord catch-up left out the least recently active conversations; raise REPLYFLOW_DISCORD_CATCHUP_CONVERSATIONS to read them",
			"left_out", left, "limit", r.cfg.CatchupConversations)
	}
	for _, chat := range chats {
		since := cursors[chat]
		if since.Before(floor) {
			since = floor
		}
		f := fetchRequest{after: SnowflakeAt(since) - 1, limit: r.cfg.CatchupLimit, first: true, why: "catch-up after READY"}
		for _, channel := range append([]string{chat}, r.activeThreads(chat, threads)...) {
			requests[channel] = f
			if !r.requestFetch(channel, f, 0) {
				waiting = append(waiting, channel)
			}
		}
	}
	// What found no free lane at once waits for one with the lanes open,
	// or it would wait for itself.
	r.lanes.releaseHold(gen)
	for _, channel := range waiting {
		if !r.requestFetch(channel, requests[channel], r.tune.acceptDeadline) && r.ctx.Err() == nil {
			r.logger.Error("Discord catch-up skipped a channel: no lane freed in time", "discord_channel", channel)
		}
	}
	r.logger.Info("Discord catch-up after READY: the channels of the running and lately closed sessions fetch what they missed",
		"running", len(open), "closed", len(closed), "conversations", len(chats), "channels", len(requests),
		"limit_per_channel", r.cfg.CatchupLimit, "max_age", r.cfg.CatchupMaxAge)
}

func (r *Receiver) requestFetch(channel string, f fetchRequest, wait time.Duration) bool {
	l := r.lanes.acquire(channel, wait)
	if l == nil {
		return false
	}
	r.lanes.request(l, f)
	r.lanes.release(l)
	return true
}

// activeThreads are the threads of a guild channel that are not archived
// (a message in an archived thread unarchives it, so this covers every
// thread with something new, unless it was archived again since: a thread
// auto-archives after an hour or more without messages). Asked once per
// guild per catch-up; a failure is logged and the channel alone is
// fetched.
func (r *Receiver) activeThreads(chat string, byGuild map[string][]*discordgo.Channel) []string {
	ctx, cancel := context.WithTimeout(r.ctx, r.tune.acceptAttempt)
	defer cancel()
	place, err := r.places.place(ctx, chat, "")
	if err != nil || place.GuildID == "" {
		if err != nil {
			r.logger.Warn("Discord catch-up: the session's channel is unknown; its threads are not fetched", "discord_channel", chat, "error", err)
		}
		return nil
	}
	list, asked := byGuild[place.GuildID]
	if !asked {
		active, err := r.session.GuildThreadsActive(place.GuildID, discordgo.WithContext(ctx))
		if err != nil {
			r.logger.Warn("Discord catch-up: the guild's active threads are unknown; only its channels are fetched", "guild", place.GuildID, "error", err)
		} else {
			list = active.Threads
		}
		byGuild[place.GuildID] = list
	}
	var out []string
	for _, t := range list {
		if t.ParentID == chat {
			r.places.remember(placeOf(t))
			out = append(out, t.ID)
		}
	}
	return out
}

// runFetch hands the lane's channel's messages above f.after to the Sink,
// oldest first, page by page, as fetchRequest says. A page that cannot be
// read, or a message the Sink does not take, asks for the fetch again
// from there after a backoff: Discord keeps the messages, so they are not
// lost while the Sink or Discord is down, only bounded by CatchupMaxAge.
func (r *Receiver) runFetch(l *lane, f fetchRequest) {
	ctx, cancel := context.WithTimeout(r.ctx, r.tune.acceptAttempt)
	place, err := r.places.place(ctx, l.id, "")
	cancel()
	if err != nil {
		r.fetchAgain(l, f, 0, err)
		return
	}
	after := f.after
	if floor := SnowflakeAt(r.now().Add(-r.cfg.CatchupMaxAge)); after < floor {
		if !f.first {
			r.logger.Error("Discord messages older than the catch-up's max age are not fetched: they are lost",
				"discord_channel", l.id, "why", f.why, "max_age", r.cfg.CatchupMaxAge)
		}
		after = floor
	}
	handed := 0
	for {
		ctx, cancel := context.WithTimeout(r.ctx, r.tune.acceptAttempt)
		page, read, err := r.readHistory(ctx, l.id, after)
		cancel()
		if err != nil {
			f.after = after
			r.fetchAgain(l, f, handed, err)
			return
		}
		r.logger.Debug("Discord channel history read", "discord_channel", l.id, "after_message", after, "messages", read, "why", f.why)
		from := after
		slices.SortFunc(page, func(a, b *discordgo.Message) int {
			return cmp.Compare(snowflakeValue(a.ID), snowflakeValue(b.ID))
		})
		for _, m := range page {
			id := snowflakeValue(m.ID)
			if id <= after {
				continue
			}
			if f.limit > 0 && handed == f.limit {
				r.logger.Warn("Discord catch-up stopped at its limit: newer messages of the channel from before the reconnect are not fetched (REPLYFLOW_DISCORD_CATCHUP_LIMIT)",
					"discord_channel", l.id, "limit", f.limit, "last_fetched", after)
				l.backoff = 0
				return
			}
			if id > l.handedUpTo && !r.hand(l, m, &place, r.now()) {
				if r.ctx.Err() == nil {
					f.after = id - 1
					r.fetchAgain(l, f, handed, nil)
				}
				return
			}
			l.handedUpTo = max(l.handedUpTo, id)
			after = id
			handed++
		}
		if read < historyPage || after == from {
			break // the last page, or a page of messages not one of which could be read
		}
	}
	l.backoff = 0
	if handed > 0 {
		r.logger.Info("Discord channel history handed on", "discord_channel", l.id, "why", f.why, "messages", handed)
	}
}

// readHistory is a page of the channel's history after the message
// after, asked for as discordgo's ChannelMessages does (same route and
// rate-limit bucket), each message read on its own (readMessage): one
// discordgo cannot read does not cost the page. read is how many the
// page held. A message unreadable even so is skipped with a Warn; when
// its ID reads, it stays in the page as that ID alone, without an
// author, so the catch-up moves past it and NormalizeMessage skips it.
func (r *Receiver) readHistory(ctx context.Context, channel string, after uint64) (page []*discordgo.Message, read int, err error) {
	q := url.Values{"limit": {strconv.Itoa(historyPage)}, "after": {strconv.FormatUint(after, 10)}}
	body, err := r.session.RequestWithBucketID(http.MethodGet, discordgo.EndpointChannelMessages(channel)+"?"+q.Encode(), nil,
		discordgo.EndpointChannelMessages(channel), discordgo.WithContext(ctx))
	if err != nil {
		return nil, 0, err
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(body, &raws); err != nil {
		return nil, 0, fmt.Errorf("%w: %v", discordgo.ErrJSONUnmarshal, err)
	}
	page = make([]*discordgo.Message, 0, len(raws))
	for _, raw := range raws {
		m, cause, err := readMessage(raw)
		id := stringField(raw, "id")
		switch {
		case err != nil:
			r.logger.Warn("Discord message of a channel's history not understood; skipped", "discord_channel", channel, "message", id, "error", err)
			if snowflakeValue(id) == 0 {
				continue
			}
			m = &discordgo.Message{ID: id, ChannelID: channel}
		case cause != nil:
			r.logger.Warn("Discord message of a channel's history read without the fields replyflow does not use: discordgo could not read the whole of it",
				"discord_channel", channel, "message", id, "error", cause)
		}
		page = append(page, m)
	}
	return page, len(raws), nil
}

// fetchAgain asks the lane to fetch again from f.after after a backoff
// (doubling from retryFirst to retryLast). The new request waits for the
// queue: what arrives meanwhile is left to it, so the order holds.
func (r *Receiver) fetchAgain(l *lane, f fetchRequest, handed int, err error) {
	if r.ctx.Err() != nil {
		return
	}
	l.backoff = min(max(2*l.backoff, r.tune.retryFirst), r.tune.retryLast)
	if f.limit > 0 {
		f.limit = max(f.limit-handed, 1)
	}
	f.first = false
	f.notBefore = time.Now().Add(l.backoff)
	args := []any{"discord_channel", l.id, "why", f.why, "after_message", f.after, "next_in", l.backoff}
	if err != nil {
		args = append(args, "error", err)
	}
	r.logger.Warn("Discord channel history not handed on yet; trying again", args...)
	r.lanes.request(l, f)
}
