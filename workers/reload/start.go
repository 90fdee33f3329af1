package reload

import (
	"context"
	"log/slog"
	"time"

	"github.com/replyflow/replyflow/workflows"
)

// Fingerprints keeps, per task queue, the fingerprint of the settings
// its open sessions were last told to load (the store's
// settings_fingerprints).
type Fingerprints interface {
	SettingsFingerprint(ctx context.Context, taskQueue string) (string, error)
	RecordSettingsFingerprint(ctx context.Context, taskQueue, fp string) error
}

// The pauses between two tries of AfterStart: a store or a Temporal that
// is briefly away is asked again soon, one that stays away once a minute.
const (
	retryFirst = time.Second
	retryMax   = time.Minute
)

// AfterStart is what a worker does once it serves its task queue with
// settings whose fingerprint is fp: when the fingerprint recorded for the
// task queue differs (or none is), it tells every open session to reload,
// at most Rate a second, and then records fp. It returns when that is
// done, or nothing had to be, or ctx ends; the worker runs it in the
// background, so its start waits for none of it.
//
// A failed pass (Temporal or the store away) is tried again, from the
// first session, after a pause that doubles up to a minute. A worker that
// stops midway leaves the old fingerprint recorded, so the next worker to
// start signals every open session again: some reload twice, which is
// harmless.
func (s Sessions) AfterStart(ctx context.Context, store Fingerprints, fp string, req workflows.ReloadRequest, logger *slog.Logger) {
	wait := retryFirst
	for {
		_, err := s.applyOnce(ctx, store, fp, req, s.limiter(), logger)
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			logger.Info("Worker stopping before every open session reloaded its settings; the next worker to start reloads them all",
				"task_queue", s.TaskQueue, "error", err)
			return
		}
		logger.Warn("Could not yet tell the open sessions to reload their changed settings; trying again (check that Temporal and the store are reachable)",
			"task_queue", s.TaskQueue, "error", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, retryMax)
	}
}

// applyOnce is one pass of AfterStart.
func (s Sessions) applyOnce(ctx context.Context, store Fingerprints, fp string, req workflows.ReloadRequest, pace waiter, logger *slog.Logger) (Count, error) {
	recorded, err := store.SettingsFingerprint(ctx, s.TaskQueue)
	if err != nil {
		return Count{}, err
	}
	if recorded == fp {
		logger.Debug("Session settings unchanged since the last worker start", "task_queue", s.TaskQueue, "fingerprint", fp)
		return Count{}, nil
	}
	started := time.Now()
	logger.Info("Session settings differ from those the open sessions loaded: every open session reloads them, in the background",
		"task_queue", s.TaskQueue, "fingerprint", fp, "recorded", recorded, "per_second", s.perSecond())
	n, err := s.all(ctx, req, pace)
	if err != nil {
		return n, err
	}
	if err := store.RecordSettingsFingerprint(ctx, s.TaskQueue, fp); err != nil {
		return n, err
	}
	logger.Info("Every open session was told to reload its settings",
		"task_queue", s.TaskQueue, "sessions", n.Signalled, "closed_meanwhile", n.Closed, "took", time.Since(started).Round(time.Millisecond))
	return n, nil
}
