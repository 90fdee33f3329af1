package slacktest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPastALimitSlackAnswers429WithRetryAfter(t *testing.T) {
	s := New(Options{})
	t.Cleanup(s.Close)
	s.AddChannel(Channel{ID: "C1", Name: "general", Members: 2})
	s.EnforceLimits(Limits{PostEvery: time.Minute, PostBurst: 2, Tiers: map[string]int{"chat.update": 1}})
	post := func() *http.Response {
		form := url.Values{"channel": {"C1"}, "text": {"x"}}
		req, _ := http.NewRequest(http.MethodPost, s.APIURL()+"chat.postMessage", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+s.BotToken)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		return resp
	}
	for range 2 {
		resp := post()
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "two at once are tolerated")
	}
	resp := post()
	defer resp.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, "60", resp.Header.Get("Retry-After"), "whole seconds until the channel's next post")
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	assert.Equal(t, map[string]any{"ok": false, "error": "ratelimited"}, body)
	assert.Len(t, s.Messages("C1"), 2, "a refused post posts nothing")

	api := slack.New(s.BotToken, slack.OptionAPIURL(s.APIURL()))
	_, _, err := api.PostMessageContext(context.Background(), "C1", slack.MsgOptionText("x", false))
	var limited *slack.RateLimitedError
	require.True(t, errors.As(err, &limited), "slack-go reads the 429: %v", err)
	assert.Equal(t, time.Minute, limited.RetryAfter)

	ts := s.Messages("C1")[0].TS
	_, _, _, err = api.UpdateMessageContext(context.Background(), "C1", ts, slack.MsgOptionText("y", false))
	require.NoError(t, err, "chat.update is limited per workspace, apart from posts")
	_, _, _, err = api.UpdateMessageContext(context.Background(), "C1", ts, slack.MsgOptionText("z", false))
	require.True(t, errors.As(err, &limited), "the tier's one a minute is spent: %v", err)
	assert.Equal(t, 3, s.RateLimitedAnswered())
}
