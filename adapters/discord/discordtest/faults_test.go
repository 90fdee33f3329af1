package discordtest_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/replyflow/replyflow/adapters/discord/discordtest"
)

func TestRateLimitAsDiscordSendsIt(t *testing.T) {
	fake, dg := start(t, discordtest.Options{})
	fake.FailNext(discordtest.RouteSend, 1, discordtest.RateLimited(1500*time.Millisecond))
	req, _ := http.NewRequest(http.MethodPost, fake.APIURL()+"channels/"+general+"/messages", strings.NewReader(`{"content":"x"}`))
	req.Header.Set("Authorization", "Bot "+fake.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Message    string  `json:"message"`
		RetryAfter float64 `json:"retry_after"`
		Global     *bool   `json:"global"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	h := resp.Header
	if resp.StatusCode != 429 || body.RetryAfter != 1.5 || body.Global == nil || *body.Global {
		t.Errorf("answer %d %+v, want 429 with retry_after 1.5, global false", resp.StatusCode, body)
	}
	if h.Get("Retry-After") != "2" || h.Get("X-RateLimit-Remaining") != "0" || h.Get("X-RateLimit-Reset-After") != "1.500" ||
		h.Get("X-RateLimit-Bucket") == "" || h.Get("X-RateLimit-Scope") != "user" || h.Get("X-RateLimit-Global") != "" {
		t.Errorf("headers = %v, want Discord's per-route 429 headers", h)
	}
	if len(fake.Sent(general)) != 0 {
		t.Error("a rate-limited send created a message")
	}

	// discordgo with its retries off: a *RateLimitError with the body's
	// retry_after; nothing is sent again.
	fake.FailNext(discordtest.RouteTyping, 1, discordtest.RateLimited(80*time.Millisecond))
	var limited *discordgo.RateLimitError
	if err := dg.ChannelTyping(general); !errors.As(err, &limited) || limited.RetryAfter != 80*time.Millisecond {
		t.Errorf("typing: err = %v, want a RateLimitError for 80ms", err)
	}
	// discordgo's bucket now holds the route until X-RateLimit-Reset-After.
	began := time.Now()
	if err := dg.ChannelTyping(general); err != nil || time.Since(began) < 50*time.Millisecond {
		t.Errorf("typing again: %v after %v, want success after discordgo waited out the bucket", err, time.Since(began))
	}
	// With its retries on (discordgo's default), it sleeps and sends again.
	fake.FailNext(discordtest.RouteTyping, 1, discordtest.RateLimited(10*time.Millisecond))
	if err := dg.ChannelTyping(general, discordgo.WithRetryOnRatelimit(true)); err != nil {
		t.Errorf("typing with retries on: %v, want discordgo's own retry to succeed", err)
	}
	if calls := fake.Calls(discordtest.RouteTyping); len(calls) != 4 || calls[2].Status != 429 || calls[3].Status != 204 {
		t.Errorf("typing calls = %+v, want 429, 204, 429, 204", calls)
	}
}

func TestServerErrorsAndDiscordgosOwnRetryOf502(t *testing.T) {
	fake, dg := start(t, discordtest.Options{})
	fake.FailNext(discordtest.RouteSend, 1, discordtest.ServerError())
	if _, err := dg.ChannelMessageSend(general, "a"); !hasCode(err, 500, 0) {
		t.Errorf("500: err = %v, want a RESTError 500", err)
	}
	fake.FailNext(discordtest.RouteSend, 1, discordtest.BadGateway())
	if _, err := dg.ChannelMessageSend(general, "b"); err != nil {
		t.Errorf("502 once: %v, want discordgo to retry it by itself", err)
	}
	fake.FailNext(discordtest.RouteSend, 1, discordtest.BadGateway())
	if _, err := dg.ChannelMessageSend(general, "c", discordgo.WithRestRetries(0)); err == nil || !strings.Contains(err.Error(), "502") {
		t.Errorf("502 with retries off: err = %v, want it returned", err)
	}
	fake.FailNext(discordtest.RouteSend, 1, discordtest.APIError(403, 50001, "Missing Access"))
	if _, err := dg.ChannelMessageSend(general, "d"); !hasCode(err, 403, 50001) {
		t.Errorf("403: err = %v, want 50001 Missing Access", err)
	}
	if sent := fake.Sent(general); len(sent) != 1 || sent[0].Content != "b" {
		t.Errorf("sent = %+v, want only b", sent)
	}
	statuses := []int{}
	for _, c := range fake.Calls(discordtest.RouteSend) {
		statuses = append(statuses, c.Status)
	}
	if want := []int{500, 502, 200, 502, 403}; !slices.Equal(statuses, want) {
		t.Errorf("statuses = %v, want %v", statuses, want)
	}
}

func TestAnswerLostThenRetriedWithTheNonceSendsOnce(t *testing.T) {
	fake, dg := start(t, discordtest.Options{})
	body := map[string]any{"content": "chunk 0", "nonce": "rf-abc-0", "enforce_nonce": true}
	fake.FailNext(discordtest.RouteSend, 1, discordtest.AnswerLost())
	if _, err := sendRaw(dg, general, body); !hasCode(err, 500, 0) {
		t.Fatalf("lost answer: err = %v, want a 500", err)
	}
	fake.FailNext(discordtest.RouteSend, 1, discordtest.HungUp())
	var urlErr *url.Error
	if _, err := sendRaw(dg, general, body); !errors.As(err, &urlErr) {
		t.Fatalf("hang-up: err = %v, want a transport error", err)
	}
	m, err := sendRaw(dg, general, body)
	if err != nil {
		t.Fatal(err)
	}
	if sent := fake.Sent(general); len(sent) != 1 || sent[0].ID != m.ID {
		t.Errorf("sent = %+v, want the one message the first try created, returned to the retry", sent)
	}
	// Without the nonce the same story duplicates: the fault did its call.
	fake.FailNext(discordtest.RouteSend, 1, discordtest.Fault{Applied: true, Status: 503, When: discordtest.InChannel(thread)})
	_, _ = dg.ChannelMessageSend(general, "served, not the fault's")
	_, _ = dg.ChannelMessageSend(thread, "x")
	_, _ = dg.ChannelMessageSend(thread, "x")
	if n := len(fake.Sent(thread)); n != 2 {
		t.Errorf("thread holds %d messages, want the duplicate a nonce prevents", n)
	}
}
