package discord

import (
	"context"
	"time"
)

// silentBeats is how many heartbeat intervals a connection may go without
// a heartbeat ACK or an event before the watchdog replaces it. discordgo
// gives up after 5 by itself, closing with 1000, which ends the session
// (its RESUME is refused and what Discord held back is lost to the
// catch-up); the watchdog comes first and closes with 4000, which keeps
// the session, so the RESUME replays it.
const silentBeats = 3

// closeResumable is the close code the watchdog uses: any code but 1000
// and 1001 leaves the session resumable.
const closeResumable = 4000

// watch looks at the connection every watchTick until ctx is done. It
// learns the heartbeat interval from the gaps between discordgo's
// heartbeat ACKs (HELLO names it, but discordgo keeps it to itself): the
// longest gap of the connection, once it has seen two. A connection with
// neither an ACK nor an event for silentBeats intervals is connected but
// delivers nothing: it is logged and closed, and Run connects again.
func (g *Gateway) watch(ctx context.Context) {
	t := time.NewTicker(g.tune.watchTick)
	defer t.Stop()
	var (
		conn    uint64
		lastAck time.Time
		gaps    int
		longest time.Duration
	)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !g.up.Load() {
			continue
		}
		ws := g.ws.Load()
		ws.RLock()
		ack := ws.LastHeartbeatAck
		ws.RUnlock()
		if c := g.conn.Load(); c != conn {
			conn, lastAck, gaps, longest = c, ack, 0, 0
			continue
		}
		if ack.After(lastAck) {
			gaps++
			longest = max(longest, ack.Sub(lastAck))
			lastAck = ack
			if gaps >= 2 {
				g.interval.Store(int64(longest))
			}
		}
		if gaps < 2 {
			continue
		}
		quiet := time.Since(g.lastActivity(ack))
		if quiet <= silentBeats*longest {
			continue
		}
		g.logger.Warn("Discord gateway connection silent: no heartbeat ACK and no event; closing it to connect again (the session is kept, so its RESUME replays what was held back)",
			"silent_for", quiet.Round(time.Millisecond), "heartbeat_interval", longest.Round(time.Millisecond))
		gaps = 0 // judged once per connection
		_ = ws.CloseWithCode(closeResumable)
	}
}
