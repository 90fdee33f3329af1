package devserver

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const timerShift = "history.timerProcessorMaxTimeShift"

// shift is the timer queue's read-ahead a list of key=value settings
// gives, or 0 when it gives none.
func shift(t *testing.T, settings []string) time.Duration {
	t.Helper()
	for _, kv := range settings {
		key, value, _ := strings.Cut(kv, "=")
		if key != timerShift {
			continue
		}
		if unquoted, err := strconv.Unquote(value); err == nil {
			value = unquoted
		}
		d, err := time.ParseDuration(value)
		require.NoError(t, err, "%s=%s", key, value)
		return d
	}
	return 0
}

// A timer shorter than a second (a 300 ms debounce window, a reaction's
// clear) fires within 100 ms of its due time on every dev server
// replyflow starts (`replyflow dev`, the tests, the bench and chaos
// programs), and on the real test cluster, which takes DynamicConfig.
func TestTheDevServerReadsItsTimerQueueAtMost100msAhead(t *testing.T) {
	var flags []string
	args := Args()
	for i, a := range args {
		if a == "--dynamic-config-value" && i+1 < len(args) {
			flags = append(flags, args[i+1])
		}
	}
	got := shift(t, flags)
	assert.Positive(t, got, "the dev server's flags set %s (its default, 1s, fires short timers up to a second late)", timerShift)
	assert.LessOrEqual(t, got, 100*time.Millisecond)
	assert.Equal(t, got, shift(t, DynamicConfig()), "the cluster's dynamic config has the same")
}

// The Compose server of deploy/ reads its timer queue as far ahead as the
// dev server (deploy/README.md says why).
func TestTheComposeServerReadsItsTimerQueueAsTheDevServer(t *testing.T) {
	data, err := os.ReadFile("../../../deploy/compose/dynamicconfig/replyflow.yaml")
	require.NoError(t, err)
	_, rest, found := strings.Cut(string(data), timerShift+":")
	require.True(t, found, "deploy/compose/dynamicconfig/replyflow.yaml sets %s", timerShift)
	_, value, found := strings.Cut(rest, "- value:")
	require.True(t, found)
	value, _, _ = strings.Cut(value, "\n")
	got, err := time.ParseDuration(strings.TrimSpace(value))
	require.NoError(t, err)
	assert.Equal(t, shift(t, DynamicConfig()), got)
}
