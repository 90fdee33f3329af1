package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// fakePlatform is a platform whose gateway side mounts one route and may
// fail for good.
type fakePlatform struct {
	name   string
	on     bool
	fail   chan error
	closed bool
	notify func(ctx context.Context, in pipeline.Inbound, text string) error
}

func (p *fakePlatform) Channel() string     { return p.name }
func (p *fakePlatform) Enabled() bool       { return p.on }
func (p *fakePlatform) HowToEnable() string { return "REPLYFLOW_" + p.name + "_ON" }
func (p *fakePlatform) Summary() string     { return "" }
func (p *fakePlatform) Validate() []error {
	return []error{errors.New(p.name + " checked")}
}

func (p *fakePlatform) Serve(_ context.Context, gw adapters.GatewaySide) (adapters.Serving, error) {
	gw.Mux.HandleFunc("GET /"+p.name, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, p.name) })
	gw.Health.Report(p.name, adapters.Health{State: adapters.StateUp})
	return adapters.Serving{Failed: p.fail, Close: func() { p.closed = true }, Notify: p.notify}, nil
}

func (p *fakePlatform) Outbound(adapters.WorkerSide) (adapters.Outbound, error) { return nil, nil }

func gatewaySide() adapters.GatewaySide {
	return adapters.GatewaySide{Mux: http.NewServeMux(), Health: NewStatus(), Logger: slog.New(slog.DiscardHandler)}
}

func TestServeStartsOnlyTheEnabledPlatformsAndForwardsAFailure(t *testing.T) {
	on := &fakePlatform{name: "on", on: true, fail: make(chan error, 1)}
	off := &fakePlatform{name: "off"}
	gw := gatewaySide()
	s, err := Serve(t.Context(), []adapters.Platform{on, off}, gw)
	require.NoError(t, err)

	for path, want := range map[string]int{"/on": http.StatusOK, "/off": http.StatusNotFound} {
		rec := httptest.NewRecorder()
		gw.Mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		assert.Equal(t, want, rec.Code, path)
	}
	rec := httptest.NewRecorder()
	gw.Health.(*Status).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	assert.JSONEq(t, `{"platforms":{"on":{"state":"up"}}}`, rec.Body.String())

	on.fail <- errors.New("token refused")
	select {
	case err := <-s.Failed:
		assert.EqualError(t, err, "on: token refused", "the failure names its platform")
	case <-time.After(10 * time.Second):
		t.Fatal("the platform's failure never reached the gateway")
	}
	s.Close()
	assert.True(t, on.closed)
}

func TestServeWithNothingEnabledSaysWhatTurnsAPlatformOn(t *testing.T) {
	_, err := Serve(t.Context(), []adapters.Platform{&fakePlatform{name: "a"}, &fakePlatform{name: "b"}}, gatewaySide())
	assert.EqualError(t, err, "no channel is enabled: set REPLYFLOW_a_ON or REPLYFLOW_b_ON")
}

func TestValidateChecksEveryPlatform(t *testing.T) {
	errs := Validate([]adapters.Platform{&fakePlatform{name: "a"}, &fakePlatform{name: "b", on: true}})
	assert.Len(t, errs, 2)
}

func TestTheRegistryNamesEachChannelOnce(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Platforms() {
		assert.False(t, seen[p.Channel()], "%s is registered twice", p.Channel())
		seen[p.Channel()] = true
	}
	assert.True(t, seen["webchat"] && seen["telegram"], "%v", seen)
}

// typingPlatform refreshes its typing indicator at its own interval.
type typingPlatform struct{ fakePlatform }

func (typingPlatform) TypingInterval() time.Duration { return 8 * time.Second }

func TestTypingIntervalsArePlatformsOwnUnlessConfigured(t *testing.T) {
	platforms := []adapters.Platform{&fakePlatform{name: "a"}, &typingPlatform{fakePlatform{name: "b"}}, &typingPlatform{fakePlatform{name: "c"}}}
	got := TypingIntervals(platforms, map[string]time.Duration{"c": time.Second, "d": 2 * time.Second})
	assert.Equal(t, map[string]time.Duration{"b": 8 * time.Second, "c": time.Second, "d": 2 * time.Second}, got)
}

// chunkingPlatform declares its own message limit.
type chunkingPlatform struct{ fakePlatform }

func (chunkingPlatform) ChunkLimit() int                       { return 50 }
func (chunkingPlatform) Chunk(markdown string, _ int) []string { return []string{markdown} }

func TestChunkersArePlatformsOwnElseTheDefault(t *testing.T) {
	got := Chunkers([]adapters.Platform{&fakePlatform{name: "a"}, &chunkingPlatform{fakePlatform{name: "b"}}})
	require.Len(t, got, 2)
	assert.Equal(t, adapters.DefaultChunker, got["a"])
	assert.Equal(t, 50, got["b"].ChunkLimit())
}

func TestTheRegisteredPlatformsDeclareTheirMessageLimits(t *testing.T) {
	limits := map[string]int{}
	for channel, c := range Chunkers(Platforms()) {
		limits[channel] = c.ChunkLimit()
	}
	assert.Equal(t, map[string]int{"webchat": 8000, "telegram": 4096, "discord": 2000, "slack": 4000}, limits)
	for _, p := range Platforms() {
		_, ok := p.(adapters.Chunker)
		assert.True(t, ok, "%s declares how its messages are cut", p.Channel())
	}
}

func TestServingSendsANoticeThroughThePlatformOfItsChannel(t *testing.T) {
	var told []string
	chat := &fakePlatform{name: "chat", on: true, notify: func(_ context.Context, in pipeline.Inbound, text string) error {
		told = append(told, in.ChatID+": "+text)
		return nil
	}}
	web := &fakePlatform{name: "web", on: true}
	s, err := Serve(t.Context(), []adapters.Platform{chat, web}, gatewaySide())
	require.NoError(t, err)
	assert.True(t, s.CanNotify("chat"))
	assert.False(t, s.CanNotify("web"), "a platform without Notify sends none")
	assert.False(t, s.CanNotify("other"))
	require.NoError(t, s.Notify(t.Context(), pipeline.Inbound{Channel: "chat", ChatID: "c1"}, "slow down"))
	assert.Error(t, s.Notify(t.Context(), pipeline.Inbound{Channel: "web", ChatID: "c1"}, "slow down"))
	assert.Equal(t, []string{"c1: slow down"}, told)
}
