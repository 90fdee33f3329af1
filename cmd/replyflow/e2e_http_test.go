package main

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cutOff writes raw to the gateway and reports whether the gateway closed
// the connection within a minute, with what it answered before.
func cutOff(t *testing.T, addr, raw string) (closed bool, answer string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, raw)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(time.Minute)))
	data, err := io.ReadAll(conn)
	return !errors.Is(err, os.ErrDeadlineExceeded), string(data)
}

func TestStalledRequestsAreCutOffAndStreamsStayOpen(t *testing.T) {
	cfg := testConfig(t)
	cfg.HTTPTimeout = 300 * time.Millisecond
	s := startStack(t, cfg)
	s.startWorker(nil)
	addr := strings.TrimPrefix(s.baseURL, "http://")

	// Headers, then a body that never comes.
	closed, answer := cutOff(t, addr, "POST /api/chats/stall/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"sender_id\":")
	assert.True(t, closed, "a stalled body holds the connection; got %q", answer)
	// Half the headers.
	closed, answer = cutOff(t, addr, "GET /healthz HTTP/1.1\r\nHost: x\r\n")
	assert.True(t, closed, "stalled headers hold the connection; got %q", answer)
	// A keep-alive connection nobody uses.
	closed, answer = cutOff(t, addr, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	assert.True(t, closed, "an idle connection is kept; got %q", answer)
	assert.Contains(t, answer, "200 OK")

	// An event stream outlives the request timeouts: what comes after
	// several of them still reaches it.
	chat := uniqueChat("stream")
	events := subscribe(t, s.baseURL, chat)
	time.Sleep(4 * cfg.HTTPTimeout)
	code, body := s.post(chat, `{"message_id":"late","sender_id":"alice","text":"still there?"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	seen := events.collectUntil(t, 30*time.Second, isReplyTo("late"))
	assert.Contains(t, summarize(seen, "late"), "message You said: still there?")
}
