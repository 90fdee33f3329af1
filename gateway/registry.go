package gateway

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/discord"
	"github.com/replyflow/replyflow/adapters/slack"
	"github.com/replyflow/replyflow/adapters/telegram"
	"github.com/replyflow/replyflow/adapters/webchat"
	"github.com/replyflow/replyflow/pipeline"
)

// Platforms is the registry: one fresh value of every platform replyflow
// knows, each holding its own settings, in the order the gateway starts
// them. A new platform is its package under adapters plus one line here.
func Platforms() []adapters.Platform {
	return []adapters.Platform{
		&webchat.Platform{},
		&telegram.Platform{},
		&slack.Platform{},
		&discord.Platform{},
	}
}

// Enabled are the platforms the settings turn on.
func Enabled(platforms []adapters.Platform) []adapters.Platform {
	var on []adapters.Platform
	for _, p := range platforms {
		if p.Enabled() {
			on = append(on, p)
		}
	}
	return on
}

// Validate checks every platform's settings.
func Validate(platforms []adapters.Platform) []error {
	var errs []error
	for _, p := range platforms {
		errs = append(errs, p.Validate()...)
	}
	return errs
}

// Outbound builds the worker side of every enabled platform, by channel.
func Outbound(platforms []adapters.Platform, w adapters.WorkerSide) (map[string]adapters.Outbound, error) {
	out := map[string]adapters.Outbound{}
	for _, p := range Enabled(platforms) {
		o, err := p.Outbound(w)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Channel(), err)
		}
		out[p.Channel()] = o
	}
	return out, nil
}

// TypingIntervals are the per-channel typing refreshes: each platform's
// own (adapters.TypingRefresher), overridden by configured.
func TypingIntervals(platforms []adapters.Platform, configured map[string]time.Duration) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, p := range platforms {
		if t, ok := p.(adapters.TypingRefresher); ok {
			out[p.Channel()] = t.TypingInterval()
		}
	}
	maps.Copy(out, configured)
	return out
}

// Chunkers are how the platforms cut their messages (adapters.ChunkerOf),
// by channel: one per platform.
func Chunkers(platforms []adapters.Platform) map[string]adapters.Chunker {
	out := make(map[string]adapters.Chunker, len(platforms))
	for _, p := range platforms {
		out[p.Channel()] = adapters.ChunkerOf(p)
	}
	return out
}

// Serving is the gateway side of every enabled platform.
type Serving struct {
	// Failed receives the first failure no retry can fix, from any
	// platform; the gateway stops on it.
	Failed  <-chan error
	closers []func()
	// notifiers are the platforms' Notify, by channel.
	notifiers map[string]func(ctx context.Context, in pipeline.Inbound, text string) error
}

var _ Notifier = Serving{}

// CanNotify says whether channel's platform sends notices.
func (s Serving) CanNotify(channel string) bool { return s.notifiers[channel] != nil }

// Notify sends text to in's chat through its platform's Notify.
func (s Serving) Notify(ctx context.Context, in pipeline.Inbound, text string) error {
	notify := s.notifiers[in.Channel]
	if notify == nil {
		return fmt.Errorf("%s sends no notices", in.Channel)
	}
	return notify(ctx, in, text)
}

// Close lets each platform end what would hold up the HTTP server's
// shutdown (event streams).
func (s Serving) Close() {
	for _, c := range s.closers {
		c()
	}
}

// Serve starts the gateway side of every enabled platform on gw.Mux.
// None waits for its platform to answer, so one platform being down holds
// up no other; a platform that fails for good sends on Failed.
func Serve(ctx context.Context, platforms []adapters.Platform, gw adapters.GatewaySide) (Serving, error) {
	on := Enabled(platforms)
	if len(on) == 0 {
		var hints []string
		for _, p := range platforms {
			hints = append(hints, p.HowToEnable())
		}
		return Serving{}, errors.New("no channel is enabled: set " + strings.Join(hints, " or "))
	}
	// Room for one failure per platform, so that none blocks on sending.
	failed := make(chan error, len(on))
	s := Serving{Failed: failed, notifiers: map[string]func(context.Context, pipeline.Inbound, string) error{}}
	for _, p := range on {
		running, err := p.Serve(ctx, gw)
		if err != nil {
			s.Close()
			return Serving{}, fmt.Errorf("start %s: %w", p.Channel(), err)
		}
		if running.Notify != nil {
			s.notifiers[p.Channel()] = running.Notify
		}
		if running.Close != nil {
			s.closers = append(s.closers, running.Close)
		}
		if running.Failed != nil {
			go func() {
				select {
				case err := <-running.Failed:
					failed <- fmt.Errorf("%s: %w", p.Channel(), err)
				case <-ctx.Done():
				}
			}()
		}
	}
	return s, nil
}
