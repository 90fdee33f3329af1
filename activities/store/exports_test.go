package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExportsOnSQLite(t *testing.T) {
	exportsSuite(t, func(t *testing.T) string { return filepath.Join(t.TempDir(), "store.db") })
}

func TestExportsOnPostgreSQL(t *testing.T) {
	base := postgresBase(t)
	exportsSuite(t, func(t *testing.T) string { return freshDatabase(t, base) })
}

// An export's document is the one its first attempt kept, and lives as
// long as the delivery ledger keeps its parts.
func exportsSuite(t *testing.T, dsn func(*testing.T) string) {
	ctx := context.Background()
	s, err := Open(ctx, dsn(t))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	s.SetRetention(Retention{Deliveries: 30 * day})

	_, found, err := s.Export(ctx, "sess", "sess/export/e1")
	require.NoError(t, err)
	assert.False(t, found)
	first, err := s.KeepExport(ctx, "sess", "sess/export/e1", ExportDocument{Text: "as it started", Messages: 4})
	require.NoError(t, err)
	assert.Equal(t, ExportDocument{Text: "as it started", Messages: 4}, first)
	retried, err := s.KeepExport(ctx, "sess", "sess/export/e1", ExportDocument{Text: "rebuilt later", Messages: 9})
	require.NoError(t, err)
	assert.Equal(t, first, retried, "the first attempt's document is kept")
	got, found, err := s.Export(ctx, "sess", "sess/export/e1")
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, first, got)

	backdate(t, s, "export_documents", "created_at", 29*day)
	_, err = s.KeepExport(ctx, "other", "other/export/e2", ExportDocument{Text: "x", Messages: 1})
	require.NoError(t, err)
	_, found, err = s.Export(ctx, "sess", "sess/export/e1")
	require.NoError(t, err)
	assert.True(t, found, "kept while the ledger may hold its parts")

	backdate(t, s, "export_documents", "created_at", 30*day+time.Hour, "session_id = ?", "sess")
	_, err = s.KeepExport(ctx, "other", "other/export/e3", ExportDocument{Text: "y", Messages: 1})
	require.NoError(t, err)
	_, found, err = s.Export(ctx, "sess", "sess/export/e1")
	require.NoError(t, err)
	assert.False(t, found, "deleted past the ledger's retention")
	assert.Equal(t, 2, count(t, s, "export_documents"))
}
