package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// report is what a run found.
type report struct {
	kills map[string]int
	// aimed counts the worker kills that came right after a post, by
	// platform.
	aimed     map[string]int
	exits     int // processes that died without being killed
	platforms []platformReport
	// talking is how long the conversations took; answered how long
	// after them the last answer came (or the wait gave up); took the
	// whole run.
	talking, answered, took time.Duration
	answeredAt              time.Time
}

// platformReport is what a run found on one platform.
type platformReport struct {
	name                                        string
	sent, turns, unanswered, uncleared, notIdle int
	// cleared is how long after the last answer every reaction was off
	// (0 when some never came off; under a second when all were off as
	// the check began).
	cleared time.Duration
	// duplicates are chunks sent twice; explained ones are each matched
	// to a worker or server kill that hit a delivery in flight in that
	// chat, where the platform has no idempotency key (Telegram). On a
	// strict platform (Slack, Discord) none is explained: strict says why.
	duplicates, explained int
	explainedBy           map[string]int // explained duplicates by victim
	strict                string
	figures               []string // the platform's own, one line each
	problems              []string
}

func (r report) ok() bool {
	for _, p := range r.platforms {
		if p.unanswered != 0 || p.uncleared != 0 || p.notIdle != 0 || p.duplicates != p.explained {
			return false
		}
	}
	return r.exits == 0
}

// platform is the report of the named platform.
func (r report) platform(name string) (platformReport, bool) {
	for _, p := range r.platforms {
		if p.name == name {
			return p, true
		}
	}
	return platformReport{}, false
}

func (r report) print(w io.Writer) {
	var aimed []string
	for _, p := range r.platforms {
		aimed = append(aimed, fmt.Sprintf("%s %d", p.name, r.aimed[p.name]))
	}
	fmt.Fprintf(w, "kills                    worker %d (right after a post on %s), gateway %d, server %d\n",
		r.kills["worker"], strings.Join(aimed, ", "), r.kills["gateway"], r.kills["server"])
	fmt.Fprintf(w, "unexpected exits         %d (must be 0)\n", r.exits)
	fmt.Fprintf(w, "time                     talking %s, last answer %s later, %s in all\n",
		r.talking.Round(time.Second), r.answered.Round(time.Second), r.took.Round(time.Second))
	for _, p := range r.platforms {
		fmt.Fprintf(w, "%s\n", p.name)
		fmt.Fprintf(w, "  inbound messages sent    %d\n", p.sent)
		fmt.Fprintf(w, "  turns run                %d\n", p.turns)
		fmt.Fprintf(w, "  never answered           %d (must be 0)\n", p.unanswered)
		if p.strict != "" {
			fmt.Fprintf(w, "  chunks delivered twice   %d (must be 0: %s)\n", p.duplicates, p.strict)
		} else {
			fmt.Fprintf(w, "  chunks delivered twice   %d (in flight at a kill of the worker %d, of the server %d; unexplained %d, must be 0)\n",
				p.duplicates, p.explainedBy["worker"], p.explainedBy["server"], p.duplicates-p.explained)
		}
		for _, line := range p.figures {
			fmt.Fprintln(w, "  "+line)
		}
		fmt.Fprintf(w, "  reactions not cleared    %d (must be 0)", p.uncleared)
		if p.cleared >= time.Second {
			fmt.Fprintf(w, "; all off %s after the last answer", p.cleared.Round(time.Second))
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "  sessions not idle        %d (must be 0)\n", p.notIdle)
		for _, line := range p.problems {
			fmt.Fprintln(w, "    -", line)
		}
	}
}

// timeFormat is how problems show a moment of the run.
const timeFormat = "15:04:05.000"

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
