package discordtest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPastABucketDiscordAnswers429WithItsHeaders(t *testing.T) {
	clock := time.Unix(1_700_000_000, 0)
	s := New(Options{Now: func() time.Time { return clock }})
	t.Cleanup(s.Close)
	s.AddGuild(Guild{ID: "1", Name: "home", Members: 2})
	s.AddChannel(Channel{ID: "2", Type: GuildText, GuildID: "1", Name: "general"})
	s.AddChannel(Channel{ID: "3", Type: GuildText, GuildID: "1", Name: "other"})
	s.EnforceLimits(Limits{Global: 8, Routes: map[string]RouteLimit{RouteSend: {Limit: 5, Window: 5 * time.Second}}})
	send := func(channel string) (*http.Response, map[string]any) {
		req, _ := http.NewRequest(http.MethodPost, s.APIURL()+"channels/"+channel+"/messages", strings.NewReader(`{"content":"x"}`))
		req.Header.Set("Authorization", "Bot "+s.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp, body
	}
	for i := range 5 {
		resp, _ := send("2")
		require.Equal(t, http.StatusOK, resp.StatusCode, "call %d", i)
		assert.Equal(t, "5", resp.Header.Get("X-RateLimit-Limit"))
		assert.Equal(t, strconv.Itoa(4-i), resp.Header.Get("X-RateLimit-Remaining"), "the bucket counts down")
		assert.Equal(t, "5.000", resp.Header.Get("X-RateLimit-Reset-After"))
		assert.NotEmpty(t, resp.Header.Get("X-RateLimit-Bucket"))
	}
	resp, body := send("2")
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, map[string]any{"message": "You are being rate limited.", "retry_after": 5.0, "global": false}, body)
	assert.Equal(t, "5", resp.Header.Get("Retry-After"))
	assert.Equal(t, "0", resp.Header.Get("X-RateLimit-Remaining"))
	assert.Equal(t, "user", resp.Header.Get("X-RateLimit-Scope"))
	assert.Empty(t, resp.Header.Get("X-RateLimit-Global"))
	assert.Len(t, s.Sent("2"), 5, "a refused call sends nothing")

	resp, _ = send("3")
	assert.Equal(t, http.StatusOK, resp.StatusCode, "another channel is another bucket")
	for range 2 {
		resp, _ = send("3")
	}
	require.Equal(t, http.StatusOK, resp.StatusCode, "the eighth call of the second")
	resp, body = send("3")
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the ninth passes the global limit")
	assert.Equal(t, true, body["global"])
	assert.Equal(t, "true", resp.Header.Get("X-RateLimit-Global"))
	assert.Equal(t, "global", resp.Header.Get("X-RateLimit-Scope"))
	assert.Equal(t, 2, s.RateLimitedAnswered())

	clock = clock.Add(5 * time.Second)
	resp, _ = send("2")
	assert.Equal(t, http.StatusOK, resp.StatusCode, "a new window")
}
