package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/pipeline"
)

const heartbeatUsage = `usage: replyflow heartbeat list
       replyflow heartbeat set [--by name] <session> every 30m [08:00-22:00] [time zone]
       replyflow heartbeat pause|resume [--by name] [--reason text] <session>
       replyflow heartbeat trigger|off <session>`

// heartbeatArgs is one `replyflow heartbeat` call, read before anything
// is dialled.
type heartbeatArgs struct {
	verb    string
	session pipeline.SessionKey
	spec    pipeline.HeartbeatSpec // set
	by      string
	note    string // pause, resume
}

func parseHeartbeatArgs(args []string) (heartbeatArgs, error) {
	if len(args) == 0 {
		return heartbeatArgs{}, errors.New(heartbeatUsage)
	}
	h := heartbeatArgs{verb: args[0]}
	fs := flag.NewFlagSet("heartbeat "+h.verb, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	by := fs.String("by", currentUser(), "who asks (recorded as operator:<by> on the schedule)")
	reason := fs.String("reason", "", "why, shown on the schedule (pause and resume)")
	if err := fs.Parse(args[1:]); err != nil {
		return h, fmt.Errorf("%w\n%s", err, heartbeatUsage)
	}
	h.by = "operator:" + *by
	wantArgs := map[string]int{"list": 0, "pause": 1, "resume": 1, "trigger": 1, "off": 1}
	switch n, known := wantArgs[h.verb]; {
	case h.verb == "set":
		if fs.NArg() < 2 {
			return h, errors.New(heartbeatUsage)
		}
		spec, err := pipeline.ParseHeartbeat(strings.Join(fs.Args()[1:], " "))
		if err != nil {
			return h, fmt.Errorf("heartbeat spec: %w", err)
		}
		h.spec = spec
	case !known:
		return h, fmt.Errorf("unknown heartbeat verb %q\n%s", h.verb, heartbeatUsage)
	case fs.NArg() != n:
		return h, errors.New(heartbeatUsage)
	}
	if *reason != "" && h.verb != "pause" && h.verb != "resume" {
		return h, fmt.Errorf("--reason is for pause and resume\n%s", heartbeatUsage)
	}
	if h.verb == "pause" || h.verb == "resume" {
		h.note = h.verb + "d by " + h.by
		if *reason != "" {
			h.note += ": " + *reason
		}
	}
	if h.verb != "list" {
		key, ok := pipeline.ParseWorkflowID(sessionID(fs.Arg(0)))
		if !ok {
			return h, fmt.Errorf("%q is not a session; give its workflow ID (session:webchat:demo) or <channel>:<chat>", fs.Arg(0))
		}
		h.session = key
	}
	return h, nil
}

// heartbeatCommand is `replyflow heartbeat`: the operator's side of the
// heartbeat schedules the chats' owners set with /heartbeat. Everything
// it does can also be done on the Temporal UI's Schedules page.
func heartbeatCommand(ctx context.Context, cfg Config, args []string, out io.Writer, logger *slog.Logger) error {
	h, err := parseHeartbeatArgs(args)
	if err != nil {
		return err
	}
	c, err := dialTemporal(ctx, cfg, "", logger)
	if err != nil {
		return err
	}
	defer c.Close()
	hb := newHeartbeats(c, cfg, logger)
	switch h.verb {
	case "list":
		return listHeartbeats(ctx, hb, out)
	case "set":
		info, err := hb.UpsertHeartbeat(ctx, pipeline.HeartbeatRequest{Session: h.session, Spec: h.spec, By: h.by})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "Heartbeat of %s: %s.\n", h.session.WorkflowID(), describeHeartbeat(info, time.Now()))
		return nil
	case "pause":
		err = hb.PauseHeartbeat(ctx, h.session, h.note)
	case "resume":
		err = hb.ResumeHeartbeat(ctx, h.session, h.note)
	case "trigger":
		err = hb.TriggerHeartbeat(ctx, h.session)
	case "off":
		err = hb.DeleteHeartbeat(ctx, h.session)
	}
	if err != nil {
		return err
	}
	done := map[string]string{"pause": "paused", "resume": "resumed", "trigger": "triggered: a tick runs now", "off": "deleted"}[h.verb]
	fmt.Fprintf(out, "Heartbeat schedule %s %s.\n", pipeline.HeartbeatScheduleID(h.session), done)
	return nil
}

func listHeartbeats(ctx context.Context, hb *activities.Heartbeats, out io.Writer) error {
	infos, err := hb.ListHeartbeats(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SESSION\tSPEC\tSTATE\tNEXT\tLAST\tNOTE")
	for _, info := range infos {
		session, _ := pipeline.HeartbeatSessionID(info.ScheduleID)
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", session, info.Spec, heartbeatState(info),
			whenRelative(info.NextRun, now), whenRelative(info.LastRun, now), info.Note)
	}
	if len(infos) == 0 {
		fmt.Fprintln(w, "(none)")
	}
	return w.Flush()
}

func heartbeatState(info pipeline.HeartbeatInfo) string {
	switch {
	case !info.On:
		return "off"
	case info.Paused:
		return "paused"
	}
	return "on"
}

// describeHeartbeat is one line: "every 30m ..., on, next tick in 12m".
func describeHeartbeat(info pipeline.HeartbeatInfo, now time.Time) string {
	if !info.On {
		return "off"
	}
	parts := []string{info.Spec, heartbeatState(info)}
	if info.Paused && info.Note != "" {
		parts[1] += " (" + info.Note + ")"
	}
	if !info.NextRun.IsZero() && !info.Paused {
		parts = append(parts, "next tick "+whenRelative(info.NextRun, now))
	}
	return strings.Join(parts, ", ")
}

// whenRelative is a time as "in 12m" or "3m ago"; "-" for none.
func whenRelative(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := t.Sub(now).Round(time.Second)
	if d >= 0 {
		return "in " + d.String()
	}
	return (-d).String() + " ago"
}
