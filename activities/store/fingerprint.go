package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// maxFingerprintBytes bounds a recorded fingerprint: a digest and its
// algorithm's name, never settings themselves.
const maxFingerprintBytes = 128

// maxTaskQueueBytes is Temporal's own limit on a task queue's name (its
// limit.maxIDLength), so settings_fingerprints holds at most one short
// row per real task queue.
const maxTaskQueueBytes = 1000

// SettingsFingerprint is the fingerprint RecordSettingsFingerprint last
// recorded for taskQueue, "" when none was.
func (s *Store) SettingsFingerprint(ctx context.Context, taskQueue string) (string, error) {
	var fp string
	err := s.db.QueryRowContext(ctx, s.q(`SELECT fingerprint FROM settings_fingerprints WHERE task_queue = ?`), taskQueue).Scan(&fp)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the settings fingerprint of task queue %s: %w", taskQueue, err)
	}
	return fp, nil
}

// RecordSettingsFingerprint records fp as the settings every open session
// of taskQueue has been told to load, replacing the one before.
func (s *Store) RecordSettingsFingerprint(ctx context.Context, taskQueue, fp string) error {
	if len(fp) > maxFingerprintBytes {
		return fmt.Errorf("record the settings fingerprint of task queue %s: %d bytes, a digest has at most %d", taskQueue, len(fp), maxFingerprintBytes)
	}
	if len(taskQueue) > maxTaskQueueBytes {
		return fmt.Errorf("record the settings fingerprint: the task queue's name is %d bytes, Temporal allows %d", len(taskQueue), maxTaskQueueBytes)
	}
	if _, err := s.db.ExecContext(ctx, s.q(`INSERT INTO settings_fingerprints (task_queue, fingerprint, recorded_at) VALUES (?, ?, ?) ON CONFLICT (task_queue) DO UPDATE SET fingerprint = excluded.fingerprint, recorded_at = excluded.recorded_at`),
		taskQueue, fp, time.Now().UTC()); err != nil {
		return fmt.Errorf("record the settings fingerprint of task queue %s: %w", taskQueue, err)
	}
	return nil
}
