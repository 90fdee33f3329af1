package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"

	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workers/reload"
	"github.com/replyflow/replyflow/workflows"
)

// sessionSettings is what a session run takes from the worker's
// configuration (LoadSettings: the defaults, then each channel's
// overrides), the part of a session's settings that a restart with a new
// configuration changes. The rest of what LoadSettings returns (the
// session's own entry, claimed owners) is in the store, changed through
// the session itself.
type sessionSettings struct {
	Defaults  pipeline.Settings            `json:"defaults"`
	ByChannel map[string]pipeline.Settings `json:"by_channel"`
}

func (c Config) sessionSettings() sessionSettings {
	defaults := c.settings()
	var channels []string
	for _, p := range c.Platforms {
		channels = append(channels, p.Channel())
	}
	channels = append(channels, sortedKeys(c.QueueModeByChannel)...)
	channels = append(channels, sortedKeys(c.ActivationByChannel)...)
	channels = append(channels, sortedKeys(c.DebounceByChannel)...)
	byChannel := map[string]pipeline.Settings{}
	for _, ch := range slices.Compact(slices.Sorted(slices.Values(channels))) {
		byChannel[ch] = c.channelSettings(pipeline.SessionKey{Channel: ch}, defaults)
	}
	return sessionSettings{Defaults: defaults, ByChannel: byChannel}
}

// sessionSettingsFingerprint digests sessionSettings: a worker whose
// fingerprint differs from the one its task queue recorded makes every
// open session reload. It holds no setting in clear.
func (c Config) sessionSettingsFingerprint() (string, error) {
	return reload.Fingerprint(c.sessionSettings())
}

// reloadWhenChanged starts, in the background, the reload of every open
// session of the worker's task queue when its session settings differ
// from those the task queue last applied (reload.Sessions.AfterStart).
// The returned function waits for it, once ctx is done.
func reloadWhenChanged(ctx context.Context, c client.Client, cfg Config, acts *activities.Activities) (wait func()) {
	recorded, ok := acts.Store.(reload.Fingerprints)
	if !ok {
		return func() {}
	}
	fp, err := cfg.sessionSettingsFingerprint()
	if err != nil {
		acts.Logger.Warn("Open sessions keep the settings they loaded until they continue as new; `replyflow reload --all` reloads them", "task_queue", cfg.TaskQueue, "error", err)
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sessions := reload.Sessions{Client: c, TaskQueue: cfg.TaskQueue}
		sessions.AfterStart(ctx, recorded, fp, workflows.ReloadRequest{By: "worker", Reason: "the worker started with changed session settings"}, acts.Logger)
	}()
	return func() { <-done }
}

// reloadCommand is `replyflow reload <session>...` and `replyflow reload
// --all`: the sessions read their settings again before their next
// message (the reload signal).
func reloadCommand(ctx context.Context, cfg Config, args []string, out io.Writer, logger *slog.Logger) error {
	fs := flag.NewFlagSet("reload", flag.ContinueOnError)
	by := fs.String("by", currentUser(), "who asks, for the session's log")
	reason := fs.String("reason", "", "why, for the session's log")
	all := fs.Bool("all", false, "every open session of the task queue (REPLYFLOW_TASK_QUEUE)")
	perSecond := fs.Float64("rate", reload.DefaultRate, "with --all: at most this many sessions a second")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *all == (fs.NArg() > 0) || *perSecond <= 0 {
		return fmt.Errorf("usage: replyflow reload [--by name] [--reason text] <session>... | --all [--rate %d]", reload.DefaultRate)
	}
	c, err := dialTemporal(ctx, cfg, "", logger)
	if err != nil {
		return err
	}
	defer c.Close()
	sessions := reload.Sessions{Client: c, TaskQueue: cfg.TaskQueue, Rate: *perSecond}
	req := workflows.ReloadRequest{By: *by, Reason: *reason}
	if *all {
		n, err := sessions.All(ctx, req)
		if err != nil {
			return fmt.Errorf("%w; run it again to reach them all (a session told twice reloads twice, which is harmless)", err)
		}
		fmt.Fprintf(out, "Reload sent to %d open session(s) on task queue %s, at most %g a second; each reads its settings again before its next message.\n",
			n.Signalled, cfg.TaskQueue, *perSecond)
		if n.Closed > 0 {
			fmt.Fprintf(out, "%d session(s) had closed meanwhile; they read their settings when their next message starts them.\n", n.Closed)
		}
		return nil
	}
	var errs []error
	for _, arg := range fs.Args() {
		id := sessionID(arg)
		if err := sessions.One(ctx, id, req); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(out, "Reload sent to %s: it reads its settings again before its next message.\n", id)
	}
	return errors.Join(errs...)
}
