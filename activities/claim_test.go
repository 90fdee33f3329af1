package activities

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/pipeline"
)

// A code printed by a start without owners claims nothing on a worker
// whose REPLYFLOW_OWNERS is set, even before any start revoked it: the
// configured owners are not rows of the store's owners table.
func TestClaimRefusesEveryCodeOnceOwnersAreConfigured(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	code, err := db.NewClaimCode(ctx, time.Hour)
	require.NoError(t, err)

	a := &Activities{Store: db, Settings: pipeline.Settings{Owners: []string{"telegram:boss"}}}
	ok, err := a.Claim(ctx, pipeline.ClaimRequest{Code: code, Who: "webchat:mallory"})
	require.NoError(t, err)
	assert.False(t, ok, "owners are configured: no code makes another")
	owners, err := db.Owners(ctx)
	require.NoError(t, err)
	assert.Empty(t, owners)

	a.Settings.Owners = nil
	ok, err = a.Claim(ctx, pipeline.ClaimRequest{Code: code, Who: "webchat:alice"})
	require.NoError(t, err)
	assert.True(t, ok, "with no owner configured, the same code still claims")
}
