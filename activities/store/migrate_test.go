package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Several workers started together on one empty database all open it, and
// it is migrated once.
func TestStoresOpenedAtOnceMigrateOnce(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) {
		openAtOnce(t, filepath.Join(t.TempDir(), "store.db"))
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		openAtOnce(t, freshDatabase(t, postgresBase(t)))
	})
}

func openAtOnce(t *testing.T, dsn string) {
	ctx := context.Background()
	const workers = 8
	stores := make([]*Store, workers)
	errs := make([]error, workers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			stores[i], errs[i] = Open(ctx, dsn)
		}()
	}
	close(start)
	wg.Wait()
	for i, s := range stores {
		if s != nil {
			t.Cleanup(func() { s.Close() })
		}
		require.NoError(t, errs[i], "store %d of %d opened at once", i+1, workers)
	}

	var recorded []string
	rows, err := stores[0].db.QueryContext(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var v string
		require.NoError(t, rows.Scan(&v))
		recorded = append(recorded, v)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, embeddedVersions(t), recorded, "every migration recorded once")

	// Every table is there: each store writes, and another reads it back.
	for i, s := range stores {
		require.NoError(t, s.MapMessage(ctx, "sess", fmt.Sprintf("chunk/%d", i), fmt.Sprint(100+i)))
		_, err := s.SessionEntry(ctx, fmt.Sprintf("session:%d", i))
		require.NoError(t, err)
		_, err = s.NewClaimCode(ctx, time.Hour)
		require.NoError(t, err)
	}
	for i := range stores {
		id, ok, err := stores[(i+1)%workers].PlatformID(ctx, "sess", fmt.Sprintf("chunk/%d", i))
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, fmt.Sprint(100+i), id)
	}
}

func embeddedVersions(t *testing.T) []string {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	require.NoError(t, err)
	var versions []string
	for _, name := range names {
		versions = append(versions, strings.TrimSuffix(filepath.Base(name), ".sql"))
	}
	return versions
}

// freshDatabase creates an empty database named for this run on the server
// of base, drops it when the test ends, and returns its DSN.
func freshDatabase(t *testing.T, base string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "replyflow_migrate_" + hex.EncodeToString(b)
	admin, err := sql.Open("pgx", base)
	require.NoError(t, err)
	t.Cleanup(func() { admin.Close() })
	_, err = admin.Exec("CREATE DATABASE " + name)
	require.NoError(t, err, "the store tests need PostgreSQL at %s with the right to create databases (set REPLYFLOW_TEST_POSTGRES_DSN, or REPLYFLOW_TEST_POSTGRES=off to skip them)", base)
	t.Cleanup(func() {
		_, err := admin.Exec("DROP DATABASE " + name + " WITH (FORCE)")
		assert.NoError(t, err, "drop the test database %s", name)
	})
	u, err := url.Parse(base)
	require.NoError(t, err)
	u.Path = "/" + name
	return u.String()
}
