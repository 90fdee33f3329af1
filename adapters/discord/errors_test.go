package discord

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/pipeline"
)

func outDelivery(chat, key string) pipeline.Delivery {
	return pipeline.Delivery{Session: outSession(chat), IdempotencyKey: key, Text: "hello", Total: 1}
}

func TestErrorsAreClassified(t *testing.T) {
	fake := outFake(t, discordtest.Options{})
	for _, tc := range []struct {
		name  string
		fault discordtest.Fault
		want  adapters.ErrorKind
		says  string // in the error, what to do
	}{
		{"500", discordtest.ServerError(), adapters.Transient, "500"},
		{"502", discordtest.BadGateway(), adapters.Transient, "Discord answered HTTP 502"},
		{"503", discordtest.Fault{Status: http.StatusServiceUnavailable}, adapters.Transient, "503"},
		{"hang-up", discordtest.Fault{Hangup: true}, adapters.Transient, "unreachable"},
		{"401", discordtest.APIError(http.StatusUnauthorized, 0, "401: Unauthorized"), adapters.Permanent, "REPLYFLOW_DISCORD_TOKEN"},
		{"missing access", discordtest.APIError(http.StatusForbidden, 50001, "Missing Access"), adapters.Permanent, "View Channel"},
		{"missing permissions", discordtest.APIError(http.StatusForbidden, 50013, "Missing Permissions"), adapters.Permanent, "grant its role Send Messages"},
		{"closed DMs", discordtest.APIError(http.StatusForbidden, 50007, "Cannot send messages to this user"), adapters.Permanent, "direct messages"},
		{"unknown channel", discordtest.APIError(http.StatusNotFound, 10003, "Unknown Channel"), adapters.Permanent, "channel or thread is gone"},
		{"invalid form", discordtest.APIError(http.StatusBadRequest, 50035, "Invalid Form Body"), adapters.Permanent, "refused the request's fields"},
		{"archived thread", discordtest.APIError(http.StatusBadRequest, 50083, "Thread is archived"), adapters.Permanent, "unarchive"},
		{"other 4xx", discordtest.APIError(http.StatusConflict, 0, "Conflict"), adapters.Permanent, "409"},
		{"429", discordtest.RateLimited(2 * time.Second), adapters.RateLimited, "429"},
	} {
		before := len(fake.Calls(discordtest.RouteSend))
		fake.FailNext(discordtest.RouteSend, 1, tc.fault)
		_, err := outClient(t, fake, ClientConfig{}).Send(context.Background(), outDelivery(outGeneral, tc.name))
		var classified *adapters.Error
		if !errors.As(err, &classified) || classified.Kind != tc.want || classified.Op != opSend || !strings.Contains(err.Error(), tc.says) ||
			strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err %v, want %s from %s saying %q", tc.name, err, tc.want, opSend, tc.says)
		}
		// discordgo's own retries are off (a 502 and a 429 too): the
		// activity's policy retries.
		if calls := len(fake.Calls(discordtest.RouteSend)) - before; calls != 1 {
			t.Errorf("%s: %d calls, want 1", tc.name, calls)
		}
	}
	if _, wait := outKind(func() error {
		fake.FailNext(discordtest.RouteSend, 1, discordtest.RateLimited(2*time.Second))
		_, err := outClient(t, fake, ClientConfig{}).Send(context.Background(), outDelivery(outGeneral, "k"))
		return err
	}()); wait != 2*time.Second {
		t.Errorf("429's wait = %s, want its retry_after, 2s", wait)
	}

	// A wrong token, an unknown channel, a missing permission for another
	// operation, a network that is down.
	wrong, _ := NewClient(ClientConfig{Token: "wrong", APIURL: fake.APIURL()})
	if _, err := wrong.Send(context.Background(), outDelivery(outGeneral, "k")); !outIsKind(err, adapters.Permanent, "REPLYFLOW_DISCORD_TOKEN") {
		t.Errorf("a wrong token: %v, want Permanent naming REPLYFLOW_DISCORD_TOKEN", err)
	}
	if _, err := outClient(t, fake, ClientConfig{}).Send(context.Background(), outDelivery("404", "k")); !outIsKind(err, adapters.Permanent, "Unknown Channel") {
		t.Errorf("an unknown channel: %v, want Permanent", err)
	}
	fake.FailNext(discordtest.RouteReact, 1, discordtest.APIError(http.StatusForbidden, 50013, "Missing Permissions"))
	asked := fake.Post(discordtest.Post{Channel: outGeneral, Author: outAda, Content: "hi"})
	err := outClient(t, fake, ClientConfig{}).SetReaction(context.Background(), pipeline.ReactionChange{Session: outSession(outGeneral), MessageID: asked.ID, State: pipeline.ReactionReceived})
	if !outIsKind(err, adapters.Permanent, "Add Reactions") {
		t.Errorf("reaction without the permission: %v, want Permanent naming Add Reactions", err)
	}
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	c, _ := NewClient(ClientConfig{Token: "t", APIURL: down.URL + "/api/v9/", ApplicationID: "1"})
	if _, err := c.Send(context.Background(), outDelivery(outGeneral, "k")); !outIsKind(err, adapters.Transient, "unreachable") {
		t.Errorf("Discord unreachable: %v, want Transient", err)
	}
	// The token of an interaction is in its webhook's URL: never in an error.
	d := outDelivery(outGeneral, "k")
	d.PrivateTo, d.PrivateVia = outAda, "secret-interaction-token"
	if _, err := c.Send(context.Background(), d); err == nil || strings.Contains(err.Error(), d.PrivateVia) {
		t.Errorf("follow-up with Discord unreachable: %v, want an error without the token", err)
	}
}

func outIsKind(err error, kind adapters.ErrorKind, says string) bool {
	got, _ := outKind(err)
	return err != nil && got == kind && strings.Contains(err.Error(), says)
}

// A 429 is RateLimited with its retry_after, naming the bucket; the
// bucket stays held for that long, answered here without a call, while
// other buckets go on.
func TestRateLimitHoldsTheBucket(t *testing.T) {
	fake := outFake(t, discordtest.Options{})
	c := outClient(t, fake, ClientConfig{})
	ctx := context.Background()
	fake.FailNext(discordtest.RouteSend, 1, discordtest.RateLimited(30*time.Second))
	_, err := c.Send(ctx, outDelivery(outGeneral, "k1"))
	if kind, wait := outKind(err); kind != adapters.RateLimited || wait != 30*time.Second || !strings.Contains(err.Error(), "channels/"+outGeneral+"/messages") {
		t.Fatalf("Send under 429: %v, want RateLimited after 30s naming the channel's bucket", err)
	}
	for range 3 {
		_, err = c.Send(ctx, outDelivery(outGeneral, "k1"))
		if kind, wait := outKind(err); kind != adapters.RateLimited || wait <= 25*time.Second || wait > 30*time.Second {
			t.Fatalf("Send while the bucket is held: %v, want RateLimited within 30s", err)
		}
	}
	if calls := fake.Calls(discordtest.RouteSend); len(calls) != 1 {
		t.Errorf("%d sends reached Discord, want 1", len(calls))
	}
	if _, err := c.Send(ctx, outDelivery(outDM, "k2")); err != nil {
		t.Errorf("Send in another channel: %v, want it sent", err)
	}
}

// A global 429 holds every bucket.
func TestGlobalRateLimitHoldsEverything(t *testing.T) {
	fake := outFake(t, discordtest.Options{})
	c := outClient(t, fake, ClientConfig{})
	ctx := context.Background()
	fake.FailNext(discordtest.RouteTyping, 1, discordtest.Fault{Status: http.StatusTooManyRequests, RetryAfter: 20 * time.Second, Global: true})
	if err := c.Typing(ctx, outSession(outGeneral), ""); !outIsKind(err, adapters.RateLimited, "429") {
		t.Fatalf("Typing under a global 429: %v, want RateLimited", err)
	}
	_, err := c.Send(ctx, outDelivery(outDM, "k"))
	if kind, wait := outKind(err); kind != adapters.RateLimited || wait <= 15*time.Second {
		t.Errorf("Send elsewhere during a global limit: %v, want RateLimited for about 20s", err)
	}
	if calls := fake.Calls(discordtest.RouteSend); len(calls) != 0 {
		t.Errorf("%d sends reached Discord during a global limit, want none", len(calls))
	}
}

// A short wait for a bucket is slept here, until the bucket resets; a
// longer one the context cuts short, with no call; discordgo never
// sleeps where no context reaches.
func TestBucketWaitIsCancellable(t *testing.T) {
	fake := outFake(t, discordtest.Options{})
	c := outClient(t, fake, ClientConfig{})
	ctx := context.Background()
	fake.FailNext(discordtest.RouteSend, 1, discordtest.RateLimited(400*time.Millisecond))
	if _, err := c.Send(ctx, outDelivery(outGeneral, "k")); !outIsKind(err, adapters.RateLimited, "429") {
		t.Fatalf("Send under 429: %v", err)
	}
	if _, err := c.Send(ctx, outDelivery(outGeneral, "k")); err != nil {
		t.Fatalf("Send after a short wait: %v", err)
	}
	calls := fake.Calls(discordtest.RouteSend)
	if gap := calls[1].At.Sub(calls[0].At); len(calls) != 2 || gap < 400*time.Millisecond {
		t.Errorf("second send %s after the 429, want it to wait for the bucket's 400ms", gap)
	}

	fake.FailNext(discordtest.RouteSend, 1, discordtest.RateLimited(4*time.Second))
	if _, err := c.Send(ctx, outDelivery(outGeneral, "k2")); !outIsKind(err, adapters.RateLimited, "429") {
		t.Fatalf("Send under 429: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Send(short, outDelivery(outGeneral, "k2"))
	if kind, _ := outKind(err); kind != adapters.Transient || !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Errorf("Send whose context ends while it waits: %v after %s, want the context's error at once", err, time.Since(start))
	}
	if len(fake.Calls(discordtest.RouteSend)) != 3 {
		t.Errorf("%d sends, want none while waiting", len(fake.Calls(discordtest.RouteSend))-3)
	}
	// Typing never waits: a refresh that cannot go now is skipped,
	// quietly, without a call.
	fake.FailNext(discordtest.RouteTyping, 1, discordtest.RateLimited(time.Second))
	_ = c.Typing(ctx, outSession(outGeneral), "")
	if err := c.Typing(ctx, outSession(outGeneral), ""); err != nil {
		t.Errorf("Typing with its bucket held: %v, want it skipped", err)
	}
	if n := len(fake.Calls(discordtest.RouteTyping)); n != 1 {
		t.Errorf("%d typing calls, want only the one answered 429", n)
	}
}
