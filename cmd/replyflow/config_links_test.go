package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLinksAreOffByDefaultAndTheirBoundsAreChecked(t *testing.T) {
	cfg := testConfig(t)
	assert.Nil(t, cfg.links(), "off unless REPLYFLOW_LINKS")
	require.NoError(t, cfg.validate())

	cfg.Links = true
	l := cfg.links()
	require.NotNil(t, l)
	assert.Equal(t, 3, l.MaxLinks)
	assert.Equal(t, int64(1<<20), l.MaxBytes)
	assert.Equal(t, 8<<10, l.MaxText)
	assert.Equal(t, 10*time.Second, l.Timeout)

	cfg.LinksMax, cfg.LinksMaxBytes, cfg.LinksMaxText, cfg.LinksTimeout = 0, 100<<20, 10, time.Hour
	err := cfg.validate()
	require.Error(t, err)
	for _, name := range []string{"REPLYFLOW_LINKS_MAX must", "REPLYFLOW_LINKS_MAX_BYTES must", "REPLYFLOW_LINKS_MAX_TEXT must", "REPLYFLOW_LINKS_TIMEOUT must"} {
		assert.Contains(t, err.Error(), name)
	}
}
