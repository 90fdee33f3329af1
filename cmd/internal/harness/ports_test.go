package harness

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFreePortsAreDistinctAndBelowTheEphemeralRange(t *testing.T) {
	ports, err := FreePorts(20)
	require.NoError(t, err)
	seen := map[int]bool{}
	for _, port := range ports {
		assert.False(t, seen[port], "port %d drawn twice", port)
		seen[port] = true
		assert.GreaterOrEqual(t, port, namedPortsFloor)
		assert.Less(t, port, min(ephemeralLow(), namedPortsCeiling), "a named port must not be one the kernel hands out")
	}
}

func TestListenBelowFallsBackToAnyPortWhenTheSpanIsTooSmall(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	// A one-port span (holding only the taken port) is too small to draw
	// from: the kernel picks instead, and never the taken port.
	ln, err := listenBelow(port, port+1)
	require.NoError(t, err)
	defer ln.Close()
	assert.NotEqual(t, port, ln.Addr().(*net.TCPAddr).Port)
}

func TestParseEphemeralLow(t *testing.T) {
	low, err := parseEphemeralLow("32768\t60999\n")
	require.NoError(t, err)
	assert.Equal(t, 32768, low)
	_, err = parseEphemeralLow("garbage")
	assert.Error(t, err)
}
