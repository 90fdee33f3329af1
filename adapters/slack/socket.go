package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/internal/lanes"
)

// SocketConfig configures the Socket Mode receiver.
type SocketConfig struct {
	AppToken string // xapp-..., for apps.connections.open
	BotToken string // xoxb-...
	APIURL   string // slack-go's default when empty; the fake's in tests
	// StaleAfter is how long a connection may go without a ping from
	// Slack before it is closed and a new one opened. Slack pings every
	// few seconds, events or not; 2 minutes when zero.
	StaleAfter time.Duration
	// Health takes the connection's state; nil for none.
	Health adapters.HealthReporter
	// Sessions lists the running sessions, whose conversations the
	// catch-up reads once the receiver started (see catchup.go); Team
	// is the bot's workspace (auth.test's team_id), whose sessions they
	// are. Nil: the catch-up knows only the conversations it sees live.
	Sessions adapters.SessionLister
	Team     string
	// Catchup bounds the catch-up; DefaultCatchupBounds where unset.
	Catchup CatchupBounds
}

// DefaultStaleAfter is SocketConfig.StaleAfter when unset.
const DefaultStaleAfter = 2 * time.Minute

// RunSocket receives events over Socket Mode until ctx is done. Each
// events_api and interactive envelope is acked only after the sink
// accepted it; one it did not stays unacked, and Slack sends it again, a
// few times: after every connection, and after a refusal until Temporal
// takes messages again, the catch-up (catchup.go) fetches from the
// conversations' history what Slack gave up sending.
// Other envelopes (hello, disconnect, slash commands) are acked or
// handled by slack-go and skipped.
//
// Health: slack-go's watchdog (OptionPingInterval = StaleAfter) tracks the
// last ping per connection; when none came for StaleAfter it closes that
// connection and only then opens a new one. Each new connection after the
// first is logged, and the state (connecting, up, failed on a rejected
// token) goes to the health reporter. It returns nil when ctx is done, or
// an error no retry fixes (a wrong token).
func (r *Receiver) RunSocket(ctx context.Context, cfg SocketConfig) error {
	if cfg.StaleAfter <= 0 {
		cfg.StaleAfter = DefaultStaleAfter
	}
	// One HTTP client for slack-go and the catch-up's reads of history.
	httpClient := &http.Client{}
	opts := []slack.Option{slack.OptionAppLevelToken(cfg.AppToken), slack.OptionHTTPClient(httpClient)}
	if cfg.APIURL != "" {
		opts = append(opts, slack.OptionAPIURL(cfg.APIURL))
	}
	api := slack.New(cfg.BotToken, opts...)
	client := socketmode.New(api, socketmode.OptionPingInterval(cfg.StaleAfter))
	report := func(h adapters.Health) {
		if cfg.Health != nil {
			cfg.Health.Report(Channel, h)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	refused := make(chan error, 1)
	go func() {
		refused <- r.runClient(ctx, client)
		cancel()
	}()
	work := lanes.New(socketLanes, socketQueued)
	caughtUp := newCatchup(r, newHistoryAPI(httpClient, cfg.BotToken, cfg.APIURL), work, cfg.Catchup).start(ctx, cfg.Sessions, cfg.Team)
	err := r.consume(ctx, client, work, report)
	cancel()
	caughtUp()  // it queues no more work
	work.Wait() // hand-offs end with ctx; their envelopes stay unacked
	if refusal := <-refused; refusal != nil {
		// Reported only now that consume has returned, so that it is the
		// last state: slack-go queues the refused attempt's "connecting"
		// event before it returns, and consume may report that event
		// after runClient returned.
		report(adapters.Health{State: adapters.StateFailed, Error: refusal.Error()})
		err = fmt.Errorf("slack Socket Mode stopped: Slack refused the tokens (%v); check REPLYFLOW_SLACK_APP_TOKEN (xapp-, with connections:write) and REPLYFLOW_SLACK_BOT_TOKEN", refusal)
	}
	return err
}

// runClient runs slack-go's client. It connects again by itself, with a
// backoff of up to 5 minutes, after any failure but a rejected token,
// whose error it returns; nil once ctx is done.
func (r *Receiver) runClient(ctx context.Context, client *socketmode.Client) error {
	err := client.RunContext(ctx)
	if ctx.Err() != nil {
		return nil
	}
	if err == nil {
		return errors.New(errString(nil))
	}
	return err
}

func errString(err error) string {
	if err == nil {
		return "stopped without an error"
	}
	return err.Error()
}

// consume reads the client's events until ctx is done. Envelopes are
// handled one at a time, in order: the sink's Accept is the only wait.
// Envelopes are handed to Temporal up to socketLanes Slack channels at
// once, in order within each channel; at most socketQueued wait, past
// which the socket is not read (Slack redelivers what waits unacked past
// its 3 s deadline, and the session drops the copies). A hand-off waits
// at most AcceptTimeout.
const (
	socketLanes  = 16
	socketQueued = 256
)

func (r *Receiver) consume(ctx context.Context, client *socketmode.Client, work *lanes.Lanes, report func(adapters.Health)) error {
	for {
		var evt socketmode.Event
		select {
		case <-ctx.Done():
			return nil
		case evt = <-client.Events:
		}
		switch evt.Type {
		case socketmode.EventTypeConnecting:
			report(adapters.Health{State: adapters.StateConnecting})
		case socketmode.EventTypeConnected:
			if c, ok := evt.Data.(*socketmode.ConnectedEvent); ok && c.ConnectionCount > 0 {
				r.logger.Info("Slack Socket Mode connection replaced: the old one was closed (silent past the limit, or Slack asked)", "connection", c.ConnectionCount)
			}
		case socketmode.EventTypeHello:
			report(adapters.Health{State: adapters.StateUp})
			if c := r.catchup.Load(); c != nil {
				c.reconnected()
			}
		case socketmode.EventTypeConnectionError:
			h := adapters.Health{State: adapters.StateConnecting}
			if e, ok := evt.Data.(*slack.ConnectionErrorEvent); ok {
				next := time.Now().Add(e.Backoff)
				h.Error, h.Attempts, h.NextAttemptAt = errString(e.ErrorObj), e.Attempt, &next
			}
			report(h)
			r.logger.Warn("Slack Socket Mode connect failed; trying again", "attempt", h.Attempts, "error", h.Error)
		case socketmode.EventTypeInvalidAuth:
			report(adapters.Health{State: adapters.StateFailed, Error: "invalid_auth"})
		case socketmode.EventTypeEventsAPI:
			ev, ok := evt.Data.(slackevents.EventsAPIEvent)
			_ = work.Go(ctx, laneOf(evt), func() {
				r.handleEnvelope(ctx, client, evt, ok, func() error { return r.HandleEvent(ctx, ev) })
			})
		case socketmode.EventTypeInteractive:
			cb, ok := evt.Data.(slack.InteractionCallback)
			_ = work.Go(ctx, laneOf(evt), func() {
				r.handleEnvelope(ctx, client, evt, ok, func() error { return r.HandleInteraction(ctx, cb) })
			})
		case socketmode.EventTypeErrorBadMessage:
			r.unreadable(ctx, client, work, evt)
		default:
			if evt.Request != nil && evt.Request.EnvelopeID != "" {
				r.ack(client, evt.Request)
			}
		}
	}
}

// laneOf is the Slack channel an envelope is about (its event's or its
// press's), so that one channel's events reach Temporal in order; "" when
// it names none.
func laneOf(evt socketmode.Event) string {
	if evt.Request == nil {
		return ""
	}
	var p struct {
		Event struct {
			Channel string `json:"channel"`
			Item    struct {
				Channel string `json:"channel"`
			} `json:"item"`
		} `json:"event"`
		Channel struct {
			ID string `json:"id"`
		} `json:"channel"`
	}
	if json.Unmarshal(evt.Request.Payload, &p) != nil {
		return ""
	}
	return firstOf(p.Event.Channel, firstOf(p.Event.Item.Channel, p.Channel.ID))
}

// handleEnvelope acks an envelope once handle returned nil, and leaves it
// unacked otherwise, so that Slack delivers it again.
func (r *Receiver) handleEnvelope(ctx context.Context, client *socketmode.Client, evt socketmode.Event, parsed bool, handle func() error) {
	if evt.Request == nil {
		return
	}
	if !parsed {
		r.logger.Warn("Slack envelope not understood; acked so that Slack does not retry it, and dropped", "envelope", evt.Request.EnvelopeID, "type", evt.Type)
		r.ack(client, evt.Request)
		return
	}
	if err := handle(); err != nil {
		if ctx.Err() == nil {
			r.logger.Warn("Slack envelope not accepted; left unacked so that Slack delivers it again",
				"envelope", evt.Request.EnvelopeID, "retry", evt.Request.RetryAttempt, "error", err)
		}
		return
	}
	r.ack(client, evt.Request)
}

func (r *Receiver) ack(client *socketmode.Client, req *socketmode.Request) {
	if err := client.Ack(*req); err != nil {
		r.logger.Warn("Slack envelope accepted but not acked; Slack will deliver it again and the session drops the copy",
			"envelope", req.EnvelopeID, "error", err)
	}
}

// unreadable takes an envelope slack-go could not parse. An events_api
// one whose event salvage reads (as Parse does over HTTP: slack-go
// already failed on the whole event, so it is parsed once more, no more)
// goes on as any other envelope. Any other is acked, as the HTTP handler
// answers 200 to such an event: it would fail the same way on every
// redelivery.
func (r *Receiver) unreadable(ctx context.Context, client *socketmode.Client, work *lanes.Lanes, evt socketmode.Event) {
	bad, ok := evt.Data.(*socketmode.ErrorBadMessage)
	if !ok {
		return
	}
	var req socketmode.Request
	if err := json.Unmarshal(bad.Message, &req); err != nil || req.EnvelopeID == "" {
		r.logger.Warn("Slack sent a Socket Mode message that is not an envelope; skipped", "error", bad.Cause)
		return
	}
	cause := bad.Cause
	if req.Type == socketmode.RequestTypeEventsAPI {
		ev, salvaged, err := salvageWrapped(req.Payload, bad.Cause)
		if err == nil {
			r.warnSalvaged(salvaged, "envelope", req.EnvelopeID, "retry", req.RetryAttempt)
			parsed := socketmode.Event{Type: socketmode.EventTypeEventsAPI, Data: ev, Request: &req}
			_ = work.Go(ctx, laneOf(parsed), func() {
				r.handleEnvelope(ctx, client, parsed, true, func() error { return r.HandleEvent(ctx, ev) })
			})
			return
		}
		cause = err
	}
	r.logger.Warn("Slack envelope not understood; acked so that Slack does not retry it, and dropped",
		"envelope", req.EnvelopeID, "type", req.Type, "error", cause)
	r.ack(client, &req)
}

// CatchupConfig configures the Events API receiver's catch-up
// (RunCatchup), as SocketConfig does Socket Mode's.
type CatchupConfig struct {
	BotToken string
	APIURL   string // slack-go's default when empty; the fake's in tests
	Sessions adapters.SessionLister
	Team     string
	Bounds   CatchupBounds
}

// RunCatchup runs the catch-up of a receiver that takes events over the
// Events API, until ctx is done: at start, from the sessions' cursors,
// and after Temporal refused a conversation's event (Slack retries an
// unanswered event three times over about five minutes, then drops it),
// with a backoff until Temporal takes them again. No connection comes
// back in this mode, so there is no round after a reconnection. Its
// hand-offs run on lanes of their own, in order within a conversation;
// a live event of the same conversation may overtake them, and the
// session drops whichever copy comes second.
func (r *Receiver) RunCatchup(ctx context.Context, cfg CatchupConfig) error {
	work := lanes.New(socketLanes, socketQueued)
	newCatchup(r, newHistoryAPI(&http.Client{}, cfg.BotToken, cfg.APIURL), work, cfg.Bounds).start(ctx, cfg.Sessions, cfg.Team)()
	work.Wait()
	return nil
}
