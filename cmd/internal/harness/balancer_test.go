package harness

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func echoBackend(t *testing.T, name string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Backend", name)
		_, _ = io.WriteString(w, name+":"+r.URL.Path+":"+string(body)+":"+r.Header.Get("X-Secret"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Requests alternate between the gateways; one that refuses connections
// is skipped, and the request goes to the next, whole.
func TestHTTPBalancerSpreadsRequestsAndSkipsADeadBackend(t *testing.T) {
	a, b := echoBackend(t, "a"), echoBackend(t, "b")
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	lb := httptest.NewServer(NewHTTPBalancer(a.URL, dead.URL, b.URL))
	defer lb.Close()

	got := map[string]int{}
	for range 6 {
		req, err := http.NewRequest(http.MethodPost, lb.URL+"/hook", strings.NewReader("update"))
		require.NoError(t, err)
		req.Header.Set("X-Secret", "s")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		backend := resp.Header.Get("X-Backend")
		assert.Equal(t, backend+":/hook:update:s", string(body), "path, body and headers reach the backend")
		got[backend]++
	}
	assert.Positive(t, got["a"])
	assert.Positive(t, got["b"])
	assert.Equal(t, 6, got["a"]+got["b"])

	none := httptest.NewServer(NewHTTPBalancer(dead.URL))
	defer none.Close()
	resp, err := http.Post(none.URL+"/hook", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadGateway, resp.StatusCode, "nobody up: the platform is told to deliver again")
}

// The TCP balancer carries a connection to a live backend, skipping one
// that refuses.
func TestTCPBalancerSkipsADeadBackend(t *testing.T) {
	live := echoBackend(t, "live")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadAddr := ln.Addr().String()
	ln.Close()
	b, err := NewTCPBalancer([]string{deadAddr, strings.TrimPrefix(live.URL, "http://")})
	require.NoError(t, err)
	defer b.Close()
	for range 3 {
		resp, err := http.Get("http://" + b.Address() + "/x")
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, "live:/x::", string(body))
	}
}
