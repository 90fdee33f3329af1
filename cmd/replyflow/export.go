package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/pipeline"
)

const exportUsage = "usage: replyflow export [--out file] [--max-bytes N] <session>, for example session:webchat:demo"

// exportCommand prints a session's current transcript as the Markdown
// document /export sends, read from the store (REPLYFLOW_STORE_DSN); it
// needs no Temporal.
func exportCommand(ctx context.Context, cfg Config, args []string, stdout io.Writer, now time.Time) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	outFile := fs.String("out", "", "write the document to this file instead of standard output")
	maxBytes := fs.Int("max-bytes", 8<<20, "the largest document; older messages are left out first")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w\n%s", err, exportUsage)
	}
	if fs.NArg() != 1 || *maxBytes <= 0 {
		return fmt.Errorf("%s", exportUsage)
	}
	key, ok := pipeline.ParseWorkflowID(sessionID(fs.Arg(0)))
	if !ok {
		return fmt.Errorf("%q is not a session; give its workflow ID (session:webchat:demo) or <channel>:<chat>", fs.Arg(0))
	}
	db, err := store.Open(ctx, cfg.StoreDSN)
	if err != nil {
		return fmt.Errorf("open the store (REPLYFLOW_STORE_DSN): %w", err)
	}
	defer db.Close()
	doc, n, err := activities.ExportDocument(ctx, db, key, *maxBytes, now)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%s has no messages in its current transcript", key.WorkflowID())
	}
	if *outFile == "" {
		_, err = io.WriteString(stdout, doc)
		return err
	}
	if err := os.WriteFile(*outFile, []byte(doc), 0o600); err != nil {
		return fmt.Errorf("write the export: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "Wrote %d message(s) of %s to %s.\n", n, key.WorkflowID(), *outFile)
	return err
}
