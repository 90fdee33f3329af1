package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/pipeline"
)

const budgetUsage = `usage:
  replyflow budget list [--day 2006-01-02] [--all] [--limit 100]
      a budget-day's spend by chat, sender and deployment (--all: every row,
      not only those over budget or refused, and the owners' /budget raise
      in chats), the breakers in force and the trips of the last day
  replyflow budget raise [<chat> | --sender <channel>:<id> | --deployment] (--tokens N | --usd X) [--day 2006-01-02]
      add to a budget for one budget-day (today by default); the chat is its
      session ID (session:webchat:demo) or <channel>:<chat>
both read and write the store (REPLYFLOW_STORE_DSN) and need no Temporal`

// budgetListed bounds the rows `budget list` prints of each part.
const budgetListed = 100

// budgetCommand runs `replyflow budget list|raise`.
func budgetCommand(ctx context.Context, cfg Config, args []string, out io.Writer, now time.Time) error {
	if len(args) == 0 || (args[0] != "list" && args[0] != "raise") {
		return fmt.Errorf("%s", budgetUsage)
	}
	db, err := store.Open(ctx, cfg.StoreDSN)
	if err != nil {
		return fmt.Errorf("open the store (REPLYFLOW_STORE_DSN): %w", err)
	}
	defer db.Close()
	db.SetRetention(cfg.retention())
	spend := cfg.spend(db)
	if args[0] == "list" {
		return budgetList(ctx, spend, db, args[1:], out, now)
	}
	return budgetRaise(ctx, spend, db, args[1:], out, now)
}

// parseInterspersed parses flags before and after the positional
// arguments (`raise webchat:demo --tokens 5`), and returns the
// positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func budgetList(ctx context.Context, spend *activities.Spend, db *store.Store, args []string, out io.Writer, now time.Time) error {
	fs := flag.NewFlagSet("budget list", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	today, resets := spend.BudgetDay(now)
	day := fs.String("day", today, "the budget-day")
	all := fs.Bool("all", false, "every row, not only those over budget or refused")
	limit := fs.Int("limit", budgetListed, "at most this many rows of each part")
	if rest, err := parseInterspersed(fs, args); err != nil || len(rest) > 0 || *limit < 1 {
		return fmt.Errorf("%s", budgetUsage)
	}
	rows, err := db.BudgetDay(ctx, *day, *limit)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Budget-day %s", *day)
	if *day == today {
		fmt.Fprintf(out, " (resets %s)", resets.Format("2006-01-02 15:04 MST"))
	}
	fmt.Fprintln(out)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SCOPE\tSUBJECT\tTOKENS\tTOKEN LIMIT\tUSD\tUSD LIMIT\tREFUSED\tSTATE")
	shown := 0
	for _, u := range rows {
		tokens, usd := budgetLimits(spend.Budgets, u.Scope)
		over := tokens > 0 && u.Tokens >= tokens+u.RaisedTokens || usd > 0 && u.CostUSD >= usd+u.RaisedUSD
		if !*all && !over && u.Refused == 0 {
			continue
		}
		state := "-"
		switch {
		case over:
			state = "over budget"
		case u.Refused > 0:
			state = "refused turns"
		}
		tokenLimit, usdLimit := limitText(float64(tokens), float64(u.RaisedTokens), "%.0f"), limitText(usd, u.RaisedUSD, "%.2f")
		if u.Scope == store.ScopeRaise {
			// What an owner's /budget raise in a chat (the subject's
			// session and turn) added to the chat's row.
			tokenLimit, usdLimit, state = fmt.Sprintf("+%d", u.RaisedTokens), fmt.Sprintf("+%.2f", u.RaisedUSD), "/budget raise in the chat"
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%.4f\t%s\t%d\t%s\n", u.Scope, u.Subject, u.Tokens, tokenLimit, u.CostUSD, usdLimit, u.Refused, state)
		shown++
	}
	if shown == 0 {
		fmt.Fprintln(w, "(none over budget)")
	}
	if err := w.Flush(); err != nil {
		return err
	}
	guards, err := db.Guards(ctx, now, *limit)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "\nBreakers in force")
	w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SESSION\tBREAKER\tUNTIL")
	for _, g := range guards {
		if now.Before(g.HeartbeatUntil) {
			fmt.Fprintf(w, "%s\theartbeat backs off\t%s\n", g.SessionID, g.HeartbeatUntil.Local().Format(time.RFC3339))
		}
		if now.Before(g.CooloffUntil) {
			fmt.Fprintf(w, "%s\tcool-off (%s)\t%s\n", g.SessionID, g.FailureType, g.CooloffUntil.Local().Format(time.RFC3339))
		}
	}
	if len(guards) == 0 {
		fmt.Fprintln(w, "(none)")
	}
	if err := w.Flush(); err != nil {
		return err
	}
	trips, err := db.Trips(ctx, now.Add(-24*time.Hour), *limit)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "\nTrips of the last 24h")
	w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "AT\tSESSION\tKIND\tDETAIL")
	for _, t := range trips {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", t.At.Local().Format(time.RFC3339), t.SessionID, t.Kind, t.Detail)
	}
	if len(trips) == 0 {
		fmt.Fprintln(w, "(none)")
	}
	return w.Flush()
}

// budgetLimits are the configured limits of a scope.
func budgetLimits(b activities.Budgets, scope string) (int64, float64) {
	switch scope {
	case store.ScopeChat:
		return b.ChatTokens, b.ChatUSD
	case store.ScopeSender:
		return b.SenderTokens, b.SenderUSD
	case store.ScopeDeployment:
		return b.DeploymentTokens, b.DeploymentUSD
	}
	return 0, 0
}

// limitText is a limit with what was added for the day; "off" for none.
func limitText(limit, raised float64, format string) string {
	if limit <= 0 {
		return "off"
	}
	text := fmt.Sprintf(format, limit)
	if raised > 0 {
		text += fmt.Sprintf(" +"+format, raised)
	}
	return text
}

func budgetRaise(ctx context.Context, spend *activities.Spend, db *store.Store, args []string, out io.Writer, now time.Time) error {
	fs := flag.NewFlagSet("budget raise", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	today, _ := spend.BudgetDay(now)
	day := fs.String("day", today, "the budget-day")
	sender := fs.String("sender", "", "a sender's budget: <channel>:<sender ID>")
	deployment := fs.Bool("deployment", false, "the deployment's budget (REPLYFLOW_TASK_QUEUE)")
	tokens := fs.Int64("tokens", 0, "tokens to add")
	usd := fs.Float64("usd", 0, "US dollars to add")
	rest, err := parseInterspersed(fs, args)
	if err != nil || *tokens < 0 || *usd < 0 || *tokens == 0 && *usd == 0 {
		return fmt.Errorf("%s", budgetUsage)
	}
	key := store.BudgetKey{Day: *day}
	switch {
	case len(rest) == 1 && *sender == "" && !*deployment:
		chat, ok := pipeline.ParseWorkflowID(sessionID(rest[0]))
		if !ok {
			return fmt.Errorf("%q is not a chat; give its session ID (session:webchat:demo) or <channel>:<chat>", rest[0])
		}
		chat.Sender = ""
		key.Scope, key.Subject = store.ScopeChat, chat.WorkflowID()
	case len(rest) == 0 && *sender != "" && !*deployment:
		if !strings.Contains(*sender, ":") {
			return fmt.Errorf("--sender %q: give <channel>:<sender ID>, e.g. telegram:42", *sender)
		}
		key.Scope, key.Subject = store.ScopeSender, *sender
	case len(rest) == 0 && *sender == "" && *deployment:
		key.Scope, key.Subject = store.ScopeDeployment, spend.Deployment
	default:
		return fmt.Errorf("%s", budgetUsage)
	}
	if err := db.RaiseBudget(ctx, key, *tokens, *usd, now); err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "Raised the %s budget of %s for %s by %d tokens and $%.2f; its next turn calls the model again if that leaves some.\n", key.Scope, key.Subject, key.Day, *tokens, *usd)
	return err
}
