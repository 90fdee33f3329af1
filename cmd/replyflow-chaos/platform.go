package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/replyflow/replyflow/pipeline"
)

// platform is one fake chat platform under chaos. The rig talks and
// checks through it only, so a platform is one file (telegram.go,
// slack.go, discord.go) and the kills and checks are the same for all.
type platform interface {
	name() string
	// env is what the worker and the gateway need to talk to the fake
	// (names without the REPLYFLOW_ prefix).
	env() map[string]string
	// say posts message k of conversation conv, carrying token, as the
	// platform hands a user's message to the gateway.
	say(conv, k int, token string) sent
	// answered says whether a bot message in m's chat carries m's token.
	answered(m sent) bool
	// showing is the bot's reaction on m now, "" when none.
	showing(m sent) string
	// waitFor returns once cond holds, checked at every change of the
	// fake, or ctx's error.
	waitFor(ctx context.Context, cond func() bool) error
	// posted counts the chunks the platform accepted so far; worker
	// kills are aimed at the next one.
	posted() int
	// tally counts into rep the chunks posted twice (explaining those the
	// platform cannot prevent by the kills) and the platform's own
	// figures, from the fake and the worker's log.
	tally(kills []kill, workerLog string, rep *platformReport)
	// session is the key of the session of a chat.
	session(chat string) pipeline.SessionKey
	close()
}

// sent is one user message: its chat, its ID there, and the token its
// text carries (the demo model echoes it back).
type sent struct {
	chat, msg, token string
}

// opener is a platform that opens each conversation before the kills
// start: once its gateway is connected (awaitGateway), the first message
// is sent and answered while everything runs, so that the conversation's
// session exists. Discord's gateway recovers what it missed while away
// only in the channels of running sessions, so a first message posted
// while it is down, or before it first connected, is lost (a documented
// limit, not a finding).
type opener interface {
	awaitGateway(ctx context.Context) error
}

// allPlatforms are the platforms `-platform all` (the default) runs at
// once, against one server, worker and gateway.
var allPlatforms = []string{"telegram", "slack", "discord"}

// platformNames are the values of -platform: all, or a comma-separated
// list of platforms.
func platformNames(flag string) ([]string, error) {
	if flag == "all" || flag == "" {
		return slices.Clone(allPlatforms), nil
	}
	var out []string
	for _, name := range strings.Split(flag, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(allPlatforms, name) {
			return nil, fmt.Errorf("-platform must be all or a comma-separated list of %s, got %q", strings.Join(allPlatforms, ", "), flag)
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

func newPlatform(name string) platform {
	switch name {
	case "slack":
		return newSlack()
	case "discord":
		return newDiscord()
	}
	return newTelegram()
}

// aimWithin is how long a worker kill waits for a post to follow: long
// enough to outlast a server restart, and the stall of the sessions a
// killed worker held (their workflow task times out after 10 s).
const aimWithin = 15 * time.Second

// aimAt waits, at most aimWithin, for p's next accepted chunk, so that
// the worker kill that follows hits its delivery in flight: the platform
// answered the post and the worker has not yet told Temporal. It says
// whether a chunk came.
func aimAt(p platform) bool {
	ctx, cancel := context.WithTimeout(context.Background(), aimWithin)
	defer cancel()
	n := p.posted()
	return p.waitFor(ctx, func() bool { return p.posted() > n }) == nil
}

// inFlightBefore is how long before a kill a send may have been answered
// and its activity's completion still be unrecorded: the worker reports
// a completion within milliseconds, so this is generous.
const inFlightBefore = 2 * time.Second

// inFlightAt lists the worker and server kills that may have hit a send
// the platform answered at first: no earlier than inFlightBefore ahead
// of the kill and no later than the victim was back.
func inFlightAt(kills []kill, first time.Time) []int {
	var out []int
	for i, k := range kills {
		if k.victim != "gateway" && !first.Before(k.at.Add(-inFlightBefore)) && !first.After(k.up) {
			out = append(out, i)
		}
	}
	return out
}

// nearKills names the kills in flight at a first send (see inFlightAt),
// to show where to look for a duplicate no kill may explain.
func nearKills(kills []kill, first time.Time) string {
	var near []string
	for _, i := range inFlightAt(kills, first) {
		near = append(near, kills[i].victim+" killed at "+kills[i].at.Format(timeFormat))
	}
	if len(near) == 0 {
		return "no kill in flight"
	}
	return strings.Join(near, ", ")
}
