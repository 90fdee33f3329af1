package telegramtest

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A held download is counted when it arrives and answered once its
// release is closed; one whose client goes away ends with it.
func TestHeldDownloadsWaitForTheirRelease(t *testing.T) {
	s, b, ctx := start(t)
	s.AddFile("doc-1", []byte("%PDF-1.7 the bytes"))
	release := make(chan struct{})
	s.HoldDownloads(release)
	f, err := b.GetFile(ctx, &bot.GetFileParams{FileID: "doc-1"})
	require.NoError(t, err)
	link := b.FileDownloadLink(f)
	download := func(ctx context.Context) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		return string(data), err
	}

	// The client goes away while held.
	gone, cancel := context.WithCancel(ctx)
	failed := make(chan error, 1)
	go func() { _, err := download(gone); failed <- err }()
	require.NoError(t, s.WaitFor(ctx, func() bool { return s.Downloads() == 1 }))
	cancel()
	require.Error(t, <-failed)

	answered := make(chan string, 1)
	go func() {
		data, err := download(ctx)
		if err != nil {
			data = "error: " + err.Error()
		}
		answered <- data
	}()
	require.NoError(t, s.WaitFor(ctx, func() bool { return s.Downloads() == 2 }))
	select {
	case got := <-answered:
		t.Fatalf("answered while held: %q", got)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	assert.Equal(t, "%PDF-1.7 the bytes", <-answered)
}
