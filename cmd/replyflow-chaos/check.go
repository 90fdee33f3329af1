package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/replyflow/replyflow/adapters/telegram"
	"github.com/replyflow/replyflow/cmd/internal/harness"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// report is what a run found.
type report struct {
	sent, turns, unanswered, uncleared, notIdle int
	// duplicates are chunks sent twice; explained ones are each matched to
	// a worker or server kill that hit a delivery in flight in that chat
	// (one per kill and chat), as Telegram has no idempotency key.
	duplicates, explained int
	explainedBy           map[string]int // explained duplicates by victim
	kills                 map[string]int
	exits                 int // processes that died without being killed
	problems              []string
}

func (r report) ok() bool {
	return r.unanswered == 0 && r.uncleared == 0 && r.notIdle == 0 && r.duplicates == r.explained && r.exits == 0
}

func (r report) print(w io.Writer) {
	fmt.Fprintf(w, "kills                    worker %d, gateway %d, server %d\n", r.kills["worker"], r.kills["gateway"], r.kills["server"])
	fmt.Fprintf(w, "inbound messages sent    %d\n", r.sent)
	fmt.Fprintf(w, "turns run                %d\n", r.turns)
	fmt.Fprintf(w, "never answered           %d (must be 0)\n", r.unanswered)
	fmt.Fprintf(w, "chunks delivered twice   %d (in flight at a kill of the worker %d, of the server %d; unexplained %d, must be 0)\n",
		r.duplicates, r.explainedBy["worker"], r.explainedBy["server"], r.duplicates-r.explained)
	fmt.Fprintf(w, "reactions not cleared    %d (must be 0)\n", r.uncleared)
	fmt.Fprintf(w, "sessions not idle        %d (must be 0)\n", r.notIdle)
	fmt.Fprintf(w, "unexpected exits         %d (must be 0)\n", r.exits)
	for _, p := range r.problems {
		fmt.Fprintln(w, "  -", p)
	}
}

func (r *rig) check(ctx context.Context, messages []sent, kills []kill) (report, error) {
	rep := report{sent: len(messages), kills: map[string]int{}, explainedBy: map[string]int{}}
	for _, k := range kills {
		rep.kills[k.victim]++
	}
	answered := func(m sent) bool {
		for _, b := range r.fake.Sent(m.chat) {
			if strings.Contains(b.Text, m.token) {
				return true
			}
		}
		return false
	}
	waitCtx, cancel := context.WithTimeout(ctx, r.cfg.settle)
	go r.keepRunning(waitCtx)
	_ = r.fake.WaitFor(waitCtx, func() bool {
		for _, m := range messages {
			if !answered(m) {
				return false
			}
		}
		return true
	})
	cancel()
	for _, m := range messages {
		if !answered(m) {
			rep.unanswered++
			rep.problems = append(rep.problems, fmt.Sprintf("message %d in chat %d (%s) was never answered", m.msg, m.chat, m.token))
		}
	}

	// Every reaction must be cleared within the clear delay (and a margin
	// for the coalescing window and a slow machine) of the last answer.
	showing := func(m sent) []string {
		if h := r.fake.Reactions(m.chat, m.msg); len(h) > 0 {
			return h[len(h)-1].Emoji
		}
		return nil
	}
	clearCtx, cancel := context.WithTimeout(ctx, r.cfg.clearDelay+clearMargin)
	_ = r.fake.WaitFor(clearCtx, func() bool {
		for _, m := range messages {
			if len(showing(m)) > 0 {
				return false
			}
		}
		return true
	})
	cancel()
	for _, m := range messages {
		if emoji := showing(m); len(emoji) > 0 {
			rep.uncleared++
			rep.problems = append(rep.problems, fmt.Sprintf("message %d in chat %d still shows %s", m.msg, m.chat, emoji[0]))
		}
	}
	rep.exits = r.exits()
	r.countDuplicates(kills, &rep)
	chats := map[int64]bool{}
	for _, m := range messages {
		chats[m.chat] = true
	}
	if err := r.checkIdle(ctx, chats, &rep); err != nil {
		return rep, err
	}
	return rep, nil
}

// clearMargin is how long past the clear delay a reaction may still show.
const clearMargin = 15 * time.Second

// inFlightBefore is how long before a kill a send may have been answered
// and its activity's completion still be unrecorded: the worker reports
// a completion within milliseconds, so this is generous.
const inFlightBefore = 2 * time.Second

// countDuplicates finds chunks sent twice to a chat and explains each by
// a worker or server kill that hit the first send in flight: answered by
// the platform no earlier than inFlightBefore ahead of the kill and no
// later than the victim was back. A kill explains at most one duplicate
// per chat, the one chunk its delivery had in flight there.
func (r *rig) countDuplicates(kills []kill, rep *report) {
	type chunk struct{ chat, text string }
	firstAt := map[chunk]time.Time{}
	used := map[[2]string]bool{} // kill index and chat
	for _, call := range r.fake.Calls("sendMessage") {
		if call.Status != 200 {
			continue
		}
		c := chunk{call.Params["chat_id"], call.Params["text"]}
		first, seen := firstAt[c]
		if !seen {
			firstAt[c] = call.At
			continue
		}
		rep.duplicates++
		explained := false
		for i, k := range kills {
			key := [2]string{strconv.Itoa(i), c.chat}
			if k.victim == "gateway" || used[key] || first.Before(k.at.Add(-inFlightBefore)) || first.After(k.up) {
				continue
			}
			used[key], explained = true, true
			rep.explainedBy[k.victim]++
			break
		}
		if explained {
			rep.explained++
		} else {
			rep.problems = append(rep.problems, fmt.Sprintf("chat %s got %q twice (first at %s) with no kill in flight",
				c.chat, firstLine(c.text), first.Format("15:04:05.000")))
		}
	}
}

// keepRunning restarts, until ctx ends, any process that died on its own.
func (r *rig) keepRunning(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
			if err := r.ensureRunning(ctx); err != nil && ctx.Err() == nil {
				fmt.Fprintf(r.cfg.progress, "chaos: %v\n", err)
			}
		}
	}
}

func (r *rig) checkIdle(ctx context.Context, chats map[int64]bool, rep *report) error {
	c, err := harness.Dial(ctx, r.temporal.Address)
	if err != nil {
		return err
	}
	defer c.Close()
	for chat := range chats {
		id := pipeline.SessionKey{Channel: telegram.Channel, Account: botAccount, Chat: strconv.FormatInt(chat, 10)}.WorkflowID()
		queryCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		v, err := c.QueryWorkflow(queryCtx, id, "", workflows.QueryState)
		cancel()
		var snap workflows.Snapshot
		if err == nil {
			err = v.Get(&snap)
		}
		if err != nil {
			rep.notIdle++
			rep.problems = append(rep.problems, fmt.Sprintf("session %s could not be queried: %v", id, err))
			continue
		}
		rep.turns += snap.TurnSeq
		if snap.Status != workflows.StatusIdle {
			rep.notIdle++
			rep.problems = append(rep.problems, fmt.Sprintf("session %s is %s", id, snap.Status))
		}
	}
	return nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
