package harness

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A history recorded again with the same content gives the same file, and
// its JSON comes back unchanged from any gzip reader.
func TestGzippedIsDeterministicAndRoundTrips(t *testing.T) {
	history := []byte("{\n  \"events\": [\n    {\n      \"eventId\": \"1\"\n    }\n  ]\n}")
	first, err := gzipped(history)
	require.NoError(t, err)
	second, err := gzipped(history)
	require.NoError(t, err)
	assert.Equal(t, first, second)

	zr, err := gzip.NewReader(bytes.NewReader(first))
	require.NoError(t, err)
	assert.True(t, zr.ModTime.IsZero(), "the header carries no modification time")
	assert.Empty(t, zr.Name, "the header carries no file name")
	back, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.Equal(t, history, back)
}
