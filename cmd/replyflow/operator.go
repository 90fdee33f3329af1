package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os/user"
	"strings"
	"text/tabwriter"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// sessionsOptions are the flags of `replyflow sessions`.
type sessionsOptions struct {
	stuck      bool
	stuckAfter time.Duration
	channel    string
	// chat finds every session of a chat: the shared one and, under
	// per-sender scope, each sender's (they share ReplyflowChat).
	chat string
	// state is one ReplyflowState value, e.g. waiting_user.
	state string
	// held finds the sessions that get no model call now: a spent
	// budget or a breaker's cool-off (ReplyflowHeldUntil).
	held  bool
	all   bool
	limit int
}

// sessionsQuery is the visibility query behind `replyflow sessions`;
// docs/operating.md, "Stuck conversations", gives the same queries for
// the UI.
func sessionsQuery(o sessionsOptions, now time.Time) string {
	parts := []string{workflows.SessionTypesQuery()}
	if !o.all {
		parts = append(parts, `ExecutionStatus = "Running"`)
	}
	if o.channel != "" {
		parts = append(parts, fmt.Sprintf("%s = %q", workflows.AttrChannel.GetName(), o.channel))
	}
	if o.chat != "" {
		parts = append(parts, fmt.Sprintf("%s = %q", workflows.AttrChat.GetName(), o.chat))
	}
	if o.state != "" {
		parts = append(parts, fmt.Sprintf("%s = %q", workflows.AttrState.GetName(), o.state))
	}
	if o.held {
		parts = append(parts, fmt.Sprintf("%s > %q", workflows.AttrHeldUntil.GetName(), now.UTC().Format(time.RFC3339)))
	}
	if o.stuck {
		cutoff := now.Add(-o.stuckAfter).UTC().Format(time.RFC3339)
		parts = append(parts, fmt.Sprintf(
			`(ReplyflowState = "delivery_failed" OR (ReplyflowState IN ("thinking", "delivering", "debouncing", "gating") AND ReplyflowLastInboundAt < %q) OR (ReplyflowQueueDepth > 0 AND ReplyflowLastInboundAt < %q) OR (ReplyflowState IS NULL AND StartTime < %q))`,
			cutoff, cutoff, cutoff))
	}
	return strings.Join(parts, " AND ")
}

func sessionsCommand(ctx context.Context, cfg Config, args []string, out io.Writer, logger *slog.Logger) error {
	fs := flag.NewFlagSet("sessions", flag.ContinueOnError)
	var o sessionsOptions
	fs.BoolVar(&o.stuck, "stuck", false, "only sessions that look stuck: delivery failed, busy or queued with no new message for --stuck-after, or never run by a worker")
	fs.DurationVar(&o.stuckAfter, "stuck-after", 10*time.Minute, "how long a busy session may go before it counts as stuck")
	fs.StringVar(&o.channel, "channel", "", "only this channel (webchat, telegram, ...)")
	fs.StringVar(&o.chat, "chat", "", "only this chat's sessions (each sender's too, under per-sender scope)")
	fs.StringVar(&o.state, "state", "", "only sessions in this state: idle, thinking, waiting_user (a proposal waits), delivering, delivery_failed (parked)")
	fs.BoolVar(&o.held, "over-budget", false, "only sessions that get no model call now: a daily budget is spent, or the failure breaker cools them off (see HELD)")
	fs.BoolVar(&o.all, "all", false, "include sessions that completed or continued as new")
	fs.IntVar(&o.limit, "limit", 100, "at most this many rows")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, err := dialTemporal(ctx, cfg, "", logger)
	if err != nil {
		return err
	}
	defer c.Close()
	return listSessions(ctx, c, o, out)
}

// listSessions prints the sessions the options select, a row each.
func listSessions(ctx context.Context, c client.Client, o sessionsOptions, out io.Writer) error {
	query := sessionsQuery(o, time.Now())
	resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: int32(o.limit)})
	if err != nil {
		return fmt.Errorf("list sessions with %q (are replyflow's search attributes registered? see deploy/README.md): %w", query, err)
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SESSION\tSTATE\tQUEUE\tLAST INBOUND\tHELD\tSTATUS")
	now := time.Now()
	for _, e := range resp.Executions {
		attrs := e.GetSearchAttributes().GetIndexedFields()
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Execution.WorkflowId,
			attrString(attrs, workflows.AttrState.GetName()), attrString(attrs, workflows.AttrQueueDepth.GetName()),
			ago(attrString(attrs, workflows.AttrLastInboundAt.GetName()), now), heldColumn(attrs, now), strings.ToLower(e.Status.String()))
	}
	if len(resp.Executions) == 0 {
		fmt.Fprintln(w, "(none)")
	}
	return w.Flush()
}

func attrString(attrs map[string]*commonpb.Payload, name string) string {
	p, ok := attrs[name]
	if !ok {
		return "-"
	}
	var v any
	if err := converter.GetDefaultDataConverter().FromPayload(p, &v); err != nil {
		return "?"
	}
	return fmt.Sprint(v)
}

// heldColumn says why and until when a session gets no model call
// ("budget:chat until 06:00Z"), "-" when it may call it.
func heldColumn(attrs map[string]*commonpb.Payload, now time.Time) string {
	until, err := time.Parse(time.RFC3339Nano, attrString(attrs, workflows.AttrHeldUntil.GetName()))
	if err != nil || !until.After(now) {
		return "-"
	}
	return attrString(attrs, workflows.AttrHeldReason.GetName()) + " for " + until.Sub(now).Round(time.Minute).String()
}

// ago renders an RFC 3339 time as its age, "3m ago"; anything else as is.
func ago(value string, now time.Time) string {
	t, err := time.Parse(time.RFC3339Nano, value)
	if err != nil {
		return value
	}
	return now.Sub(t).Round(time.Second).String() + " ago"
}

func retryCommand(ctx context.Context, cfg Config, args []string, out io.Writer, logger *slog.Logger) error {
	fs := flag.NewFlagSet("retry", flag.ContinueOnError)
	by := fs.String("by", currentUser(), "who asks, for the session's log")
	reason := fs.String("reason", "", "why, for the session's log")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: replyflow retry [--by name] [--reason text] <session>")
	}
	return onSession(ctx, cfg, logger, fs.Arg(0), func(c client.Client, id string, snap workflows.Snapshot) error {
		a := snap.Active
		if a == nil || a.Phase != workflows.PhaseParked {
			fmt.Fprintf(out, "Nothing is parked in %s (state %s); nothing changed.\n", id, snap.Status)
			return nil
		}
		req := workflows.RetryRequest{By: *by, Reason: *reason}
		if err := c.SignalWorkflow(ctx, id, "", workflows.SignalRetry, req); err != nil {
			return fmt.Errorf("signal retry to %s: %w", id, err)
		}
		delivered := 0
		if snap.LastTurn != nil {
			delivered = snap.LastTurn.Delivered
		}
		fmt.Fprintf(out, "Retry sent to %s: turn %s resumes from chunk %d; `replyflow inspect %s` shows how it goes.\n",
			id, a.TurnID, delivered+1, fs.Arg(0))
		return nil
	})
}

// onSession dials Temporal, queries the session's state, and hands both to do.
func onSession(ctx context.Context, cfg Config, logger *slog.Logger, arg string, do func(client.Client, string, workflows.Snapshot) error) error {
	id := sessionID(arg)
	c, err := dialTemporal(ctx, cfg, "", logger)
	if err != nil {
		return err
	}
	defer c.Close()
	snap, err := querySnapshot(ctx, c, id)
	if err != nil {
		return err
	}
	return do(c, id, snap)
}

// decideCommand is `replyflow approve|reject <session> <proposal>`: an
// update, so that a refusal (not allowed, unknown, already decided) comes
// back at once.
func decideCommand(ctx context.Context, cfg Config, decision string, args []string, out io.Writer, logger *slog.Logger) error {
	fs := flag.NewFlagSet(decision, flag.ContinueOnError)
	by := fs.String("by", currentUser(), "who decides (recorded as operator:<by>)")
	reason := fs.String("reason", "", "why, told to the model and shown in the chat")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return fmt.Errorf("usage: replyflow %s [--reason text] <session> <proposal>", decision)
	}
	id := sessionID(fs.Arg(0))
	c, err := dialTemporal(ctx, cfg, "", logger)
	if err != nil {
		return err
	}
	defer c.Close()
	d := pipeline.Decision{ID: fs.Arg(1), Decision: decision, By: "operator:" + *by, Reason: *reason}
	handle, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: workflows.UpdateDecide, Args: []any{d}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return fmt.Errorf("%s proposal %s in %s: %w", decision, d.ID, id, err)
	}
	var result string
	if err := handle.Get(ctx, &result); err != nil {
		return fmt.Errorf("%s proposal %s in %s: %w", decision, d.ID, id, explainEncrypted(err))
	}
	fmt.Fprintln(out, result)
	return nil
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "operator"
}

// sessionID accepts a workflow ID or the part after "session:".
func sessionID(arg string) string {
	if strings.HasPrefix(arg, pipeline.WorkflowIDPrefix) {
		return arg
	}
	return pipeline.WorkflowIDPrefix + arg
}

func inspectCommand(ctx context.Context, cfg Config, args []string, out io.Writer, logger *slog.Logger) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the raw state snapshot as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: replyflow inspect [--json] <session>, for example session:webchat:demo")
	}
	return onSession(ctx, cfg, logger, fs.Arg(0), func(_ client.Client, _ string, snap workflows.Snapshot) error {
		if *asJSON {
			enc := json.NewEncoder(out)
			enc.SetIndent("", "  ")
			return enc.Encode(snap)
		}
		_, err := io.WriteString(out, renderSnapshot(snap, time.Now()))
		return err
	})
}

func querySnapshot(ctx context.Context, c client.Client, id string) (workflows.Snapshot, error) {
	var snap workflows.Snapshot
	v, err := c.QueryWorkflow(ctx, id, "", workflows.QueryState)
	if err != nil {
		return snap, fmt.Errorf("query the state of %s (is it running? `replyflow sessions --all` lists every session): %w", id, err)
	}
	if err := v.Get(&snap); err != nil {
		return snap, fmt.Errorf("read the state of %s: %w", id, explainEncrypted(err))
	}
	return snap, nil
}

// renderSnapshot is the readable view of the state query.
func renderSnapshot(s workflows.Snapshot, now time.Time) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(w, "%s\t"+format+"\n", append([]any{k}, args...)...) }
	row("Session", "%s", s.Session.WorkflowID())
	row("State", "%s", s.Status)
	row("Models", "%s", strings.Join(s.Settings.Models, " → "))
	if s.ModelOverride != "" {
		row("Chosen", "%s (strict, set with /model)", s.ModelOverride)
	}
	row("Queue", "%s; %d batch(es) waiting", s.Queue.Describe(), len(s.Queued))
	if t := s.LastTurn; t != nil {
		last := fmt.Sprintf("%s, turn %s", t.Outcome, t.TurnID)
		if d := t.Duration(); d > 0 {
			last += " in " + d.Round(time.Millisecond).String()
		}
		if t.Error != "" {
			last += ": " + t.Error
		}
		row("Last turn", "%s", last)
	}
	if a := s.Active; a != nil {
		row("Running", "turn %s, %s, step %d, messages %s, for %s", a.TurnID, a.Phase, a.Step+1,
			strings.Join(a.MessageIDs, " "), now.Sub(a.StartedAt).Round(time.Second))
		if a.Phase == workflows.PhaseParked {
			row("Fix", "the cause in Last turn, then: replyflow retry %s", s.Session.WorkflowID())
		}
	}
	for _, p := range s.Proposals {
		if p.Status != workflows.ProposalPending {
			continue
		}
		row("Proposal", "%s: %s (%s), asked by %s, expires in %s; decide: replyflow approve|reject %s %s",
			p.ID, p.Call.Name, p.Summary, p.Requester, p.ExpiresAt.Sub(now).Round(time.Second), s.Session.WorkflowID(), p.ID)
	}
	for _, buf := range s.Buffers {
		row("Debouncing", "%s from %s, flush in %s", strings.Join(buf.MessageIDs, " "), buf.Sender, buf.FlushAt.Sub(now).Round(time.Millisecond))
	}
	for i, q := range s.Queued {
		row(fmt.Sprintf("Queued #%d", i+1), "%s (%s)", strings.Join(q.MessageIDs, " "), q.Mode)
	}
	for _, r := range s.Reactions {
		when := "stays until acted on"
		if !r.ClearAt.IsZero() {
			when = "clears in " + r.ClearAt.Sub(now).Round(time.Second).String()
		}
		row("Reaction", "%s on %s, %s", r.State, r.MessageID, when)
	}
	c := s.Counters
	row("Counters", "inbound %d, duplicates %d, turns %d, dropped %d, steered %d, interrupted %d, commands %d",
		c.Inbound, c.Duplicates, c.Turns, c.Dropped, c.Steered, c.Interrupted, c.Commands)
	row("History", "%d events in run %d", s.HistoryLength, c.Runs)
	_ = w.Flush()
	return b.String()
}
