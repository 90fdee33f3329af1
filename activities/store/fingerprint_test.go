package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSettingsFingerprintOnSQLite(t *testing.T) {
	settingsFingerprintSuite(t, func(t *testing.T) string { return filepath.Join(t.TempDir(), "store.db") })
}

func TestSettingsFingerprintOnPostgreSQL(t *testing.T) {
	base := postgresBase(t)
	settingsFingerprintSuite(t, func(t *testing.T) string { return freshDatabase(t, base) })
}

func settingsFingerprintSuite(t *testing.T, dsn func(*testing.T) string) {
	ctx := context.Background()
	d := dsn(t)
	s, err := Open(ctx, d)
	require.NoError(t, err)
	defer s.Close()

	got, err := s.SettingsFingerprint(ctx, "replyflow")
	require.NoError(t, err)
	assert.Equal(t, "", got, "nothing recorded yet")

	require.NoError(t, s.RecordSettingsFingerprint(ctx, "replyflow", "sha256:aaaa"))
	require.NoError(t, s.RecordSettingsFingerprint(ctx, "other-queue", "sha256:bbbb"))
	require.NoError(t, s.RecordSettingsFingerprint(ctx, "replyflow", "sha256:cccc"))

	// Another process (a second worker) reads what the first recorded.
	other, err := Open(ctx, d)
	require.NoError(t, err)
	defer other.Close()
	got, err = other.SettingsFingerprint(ctx, "replyflow")
	require.NoError(t, err)
	assert.Equal(t, "sha256:cccc", got, "the newest record of a task queue wins")
	got, err = other.SettingsFingerprint(ctx, "other-queue")
	require.NoError(t, err)
	assert.Equal(t, "sha256:bbbb", got, "each task queue has its own")

	var rows int
	require.NoError(t, s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM settings_fingerprints`).Scan(&rows))
	assert.Equal(t, 2, rows, "one row per task queue, however often it is recorded")

	err = s.RecordSettingsFingerprint(ctx, "replyflow", strings.Repeat("f", maxFingerprintBytes+1))
	require.Error(t, err, "a fingerprint longer than a digest is refused: the table holds digests only")
	assert.Contains(t, err.Error(), "replyflow")
	err = s.RecordSettingsFingerprint(ctx, strings.Repeat("q", maxTaskQueueBytes+1), "sha256:dddd")
	require.Error(t, err, "a task queue name longer than Temporal allows is refused")
}
