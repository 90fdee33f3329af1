package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/store"
)

// The worker's store keeps what the settings say: the retentions an
// operator sets, and tool results as long as a turn may still read them,
// which a proposal TTL longer than the old fixed 48 h stretches.
func TestTheWorkersStoreKeepsWhatTheSettingsSay(t *testing.T) {
	assert.Equal(t, store.DefaultRetention(), testConfig(t).retention(), "the defaults are the store's own")

	cfg := testConfig(t)
	cfg.ProposalTTL = 7 * 24 * time.Hour
	cfg.DeliveryRetention = 10 * 24 * time.Hour
	cfg.TranscriptRetention = 20 * 24 * time.Hour
	cfg.FeedbackRetention = 30 * 24 * time.Hour
	cfg.BudgetRetention = 40 * 24 * time.Hour
	require.NoError(t, cfg.validate())
	_, db, err := newActivities(context.Background(), cfg, slog.Default())
	require.NoError(t, err)
	defer db.Close()
	got := db.Retention()
	assert.GreaterOrEqual(t, got.ToolResults, time.Duration(cfg.MaxSteps)*cfg.ProposalTTL, "a turn may wait a proposal TTL at each step")
	assert.Equal(t, store.ToolResultsRetention(cfg.ProposalTTL, cfg.MaxSteps), got.ToolResults)
	assert.Equal(t, store.Retention{ToolResults: got.ToolResults, Deliveries: 10 * 24 * time.Hour, Transcripts: 20 * 24 * time.Hour, Feedback: 30 * 24 * time.Hour, Spend: 40 * 24 * time.Hour,
		ChatLog: store.DefaultRetention().ChatLog, Media: got.ToolResults}, got, "files' content as long as their rows, unless REPLYFLOW_MEDIA_RETENTION says less")

	cfg.DeliveryRetention = time.Hour
	cfg.TranscriptRetention = 0
	cfg.BudgetRetention = 24 * time.Hour
	err = cfg.validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "REPLYFLOW_DELIVERY_RETENTION")
	assert.Contains(t, err.Error(), "REPLYFLOW_TRANSCRIPT_RETENTION")
	assert.Contains(t, err.Error(), "REPLYFLOW_BUDGET_RETENTION")
}
