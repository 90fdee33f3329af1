package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// Activities holds the dependencies of every activity. Register it with
// workers.New; its methods are the activities.
type Activities struct {
	// Settings are the defaults every session gets.
	Settings pipeline.Settings
	// Models builds the model of each provider/model name.
	Models ModelSource
	// SystemPrompt is the persona every turn starts with.
	SystemPrompt string
	// Tools are offered to the model; nil offers only skip_response.
	Tools *Tools
	// Store keeps transcripts, session entries and the message ID map;
	// nil runs without memory.
	Store Transcripts
	// ContextTokens bounds the prompt; Location is the time zone of the
	// dates the model sees.
	ContextTokens int
	Location      *time.Location
	// Outbound maps a channel name to its adapter.
	Outbound map[string]adapters.Outbound
	// TypingInterval is how often the typing indicator is refreshed while
	// a turn runs; zero turns it off. TypingByChannel overrides it per
	// channel (Telegram's indicator lasts 5 s, Discord's 10 s).
	TypingInterval  time.Duration
	TypingByChannel map[string]time.Duration
	// Chunkers cut the replies activities send in parts themselves (an
	// export's text), by channel: one per registered platform
	// (gateway.Chunkers). A channel without one gets
	// adapters.DefaultChunker.
	Chunkers map[string]adapters.Chunker
	// Streaming is how answers show while the model writes them.
	Streaming Streaming
	// ThinkingAfter is the reaction coalescing window: a model step shows
	// "thinking" on its messages only once it has run this long.
	ThinkingAfter time.Duration
	// StaleAfter: a reply to a message sent this long ago or more starts
	// with a line saying which message it answers and how late
	// (withStaleNote); zero never says so.
	StaleAfter time.Duration
	// ChannelSettings resolves a session's settings from the defaults
	// (per-channel overrides); nil means Settings as they are.
	ChannelSettings func(pipeline.SessionKey, pipeline.Settings) pipeline.Settings
	// Heartbeats are the heartbeat schedule's activities; nil leaves them
	// unregistered (they need a Temporal client, which the worker sets).
	Heartbeats *Heartbeats
	// Links shows the model the pages users link to (links.go); nil
	// reads none.
	Links *Links
	// Spend holds the budgets and breakers of model calls (spend.go);
	// nil runs without.
	Spend *Spend
	// Media shows the model the files users send (media.go); nil shows
	// them as lines of text.
	Media *Media
	// Voice speaks the replies of the chats that have voice replies
	// (voice.go); nil speaks none, and /voice says so.
	Voice  *Voice
	Logger *slog.Logger
}

// ModelSource gives the model of a provider/model name; *models.Registry
// is the real one.
type ModelSource interface {
	Get(name string) (models.Model, error)
}

// LoadSettings returns the settings of a session run, with what the
// session's entry in the store saved.
func (a *Activities) LoadSettings(ctx context.Context, key pipeline.SessionKey) (pipeline.Settings, error) {
	s := a.Settings
	if a.ChannelSettings != nil {
		s = a.ChannelSettings(key, s)
	}
	if a.Store != nil {
		entry, err := a.Store.SavedSettings(ctx, key.WorkflowID())
		if err != nil {
			return s, err
		}
		s.Saved.ModelOverride, s.Saved.Activation = entry.ModelOverride, entry.Activation
		s.Saved.Think, s.Saved.Verbose = pipeline.ThinkLevel(entry.ThinkLevel), entry.Verbose
		s.Saved.Usage, s.Saved.Muted = pipeline.UsageMode(entry.UsageMode), entry.Muted
		claimed, err := a.Store.Owners(ctx)
		if err != nil {
			return s, err
		}
		s.Owners = append(slices.Clone(s.Owners), claimed...)
		if entry.QueueJSON != "" {
			var q pipeline.QueuePatch
			if err := json.Unmarshal([]byte(entry.QueueJSON), &q); err == nil {
				s.Saved.Queue = &q
			}
		}
	}
	return s, nil
}

func mustJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// AgentTurn asks the model for a reply. While the model works it heartbeats
// (so a dead worker is noticed within the heartbeat timeout and the turn is
// retried elsewhere) and refreshes the typing indicator; both stop when the
// turn returns.
func (a *Activities) AgentTurn(ctx context.Context, req pipeline.TurnRequest) (pipeline.TurnResult, error) {
	out, err := a.outbound(req.Session.Channel)
	if err != nil {
		return pipeline.TurnResult{}, err
	}
	// Before typing shows: /budget, /voice, and a refused step, answer
	// at once.
	reply, ok, err := a.budgetCommand(ctx, req)
	if err == nil && !ok {
		reply, ok, err = a.voiceCommand(ctx, out, req)
	}
	if err != nil {
		return pipeline.TurnResult{}, err
	} else if ok {
		// The session keeps its hold (or learns a raise ended it).
		held, err := a.Spend.currentHold(ctx, req)
		if err != nil {
			return pipeline.TurnResult{}, err
		}
		return a.answeredWithoutModel(ctx, out, req, pipeline.TurnResult{Reply: reply, Model: req.Model, Held: held})
	}
	admitted, err := a.Spend.admit(ctx, a.Logger, req)
	if err != nil {
		return pipeline.TurnResult{}, err
	}
	if admitted.refused != nil {
		return a.answeredWithoutModel(ctx, out, req, *admitted.refused)
	}
	turnCtx, stop := context.WithCancel(ctx)
	refresherDone := make(chan struct{})
	showedThinking := false
	live := &liveAnswer{}
	go func() {
		defer close(refresherDone)
		showedThinking = a.keepAlive(turnCtx, out, req, live)
	}()
	// The turn has not ended while a typing call is still in flight.
	defer func() {
		stop()
		<-refresherDone
		if showedThinking && ctx.Err() != nil {
			a.takeBackThinking(ctx, out, req)
		}
		if stoppedByTheSession(ctx) {
			a.markStopped(ctx, out, req, live.snapshot())
		}
	}()

	model, err := a.Models.Get(req.Model)
	if err != nil {
		return pipeline.TurnResult{}, modelError(req, err, nil)
	}
	transcriptID, history, err := a.transcript(turnCtx, req)
	if err != nil {
		return pipeline.TurnResult{}, fmt.Errorf("load the transcript of %s: %w", req.Session.WorkflowID(), err)
	}
	// The typing refresher reads req: the filled-in copy is the prompt's.
	full, err := a.withStoredResults(turnCtx, req)
	if err != nil {
		// Unwrapped: an ApplicationError keeps its type only at the top.
		return pipeline.TurnResult{}, err
	}
	full, files, releaseFiles, err := a.withMedia(turnCtx, out, full)
	defer releaseFiles()
	if err != nil {
		return pipeline.TurnResult{}, err
	}
	// The pages go to the prompt only: the transcript keeps full.
	prompt := a.prompt(a.withLinks(turnCtx, full), history, time.Now())
	withFiles(&prompt, files)
	prompt.Think = req.Think
	if !req.NoTools {
		prompt.Tools = a.Tools.specs()
	}
	var answer models.Completion
	if mode := a.streamModeOf(req, model); mode != pipeline.StreamOff {
		answer, err = a.stream(ctx, turnCtx, out, req, model.(models.Streamer), prompt, mode, live)
	} else {
		answer, err = model.Complete(turnCtx, prompt)
	}
	if err != nil {
		if ctx.Err() != nil {
			if workerStopped(ctx) {
				return pipeline.TurnResult{}, workerStoppedError(req, ctx.Err(), live.snapshot())
			}
			if shown := live.snapshot(); shown != nil && !stoppedByTheSession(ctx) {
				// Timed out mid-stream: the attempt after it must know
				// what is on screen.
				return pipeline.TurnResult{}, modelError(req, fmt.Errorf("the attempt was cut short mid-stream: %w", ctx.Err()), shown)
			} else if shown != nil {
				a.rememberStopped(ctx, transcriptID, req, shown)
			}
			return pipeline.TurnResult{}, ctx.Err()
		}
		failure := modelError(req, err, live.snapshot())
		a.Spend.failed(ctx, a.Logger, req, errorType(failure))
		return pipeline.TurnResult{}, failure
	}
	a.Spend.counted(ctx, a.Logger, req.Session, turnSender(req), req.Model, turnKind(req), answer.Usage, func() int64 { return estimateTokens(prompt, answer) })
	a.Spend.succeeded(ctx, a.Logger, req, admitted.guard)
	if stopped := a.Spend.repeated(ctx, a.Logger, req, answer.ToolCalls); stopped != "" {
		answer.Text, answer.ToolCalls = stopped, nil
	}
	if len(answer.ToolCalls) == 0 && isHeartbeatTurn(req) {
		if trip := a.Spend.heartbeatAnswered(ctx, a.Logger, req, answer.Text); trip != nil && a.Heartbeats != nil {
			// Ticks before the back-off ends would only answer without
			// the model: the Schedule skips them instead. Best effort:
			// the breaker holds either way.
			if err := a.Heartbeats.BackOffHeartbeat(ctx, req.Session, trip.Until, trip.Detail); err != nil {
				a.Logger.Warn("Heartbeat breaker tripped, but its Schedule still ticks; ticks answer without the model until the back-off ends", "session", req.Session.WorkflowID(), "error", err)
			}
		}
	}
	result := pipeline.TurnResult{Reply: answer.Text, Model: req.Model, ToolCalls: answer.ToolCalls, ThinkIgnored: answer.ThinkIgnored, Shown: live.snapshot()}
	if answer.Usage != (pipeline.Usage{}) {
		result.Usage = &answer.Usage
	}
	if fixed := uniqueCallIDs(req.Step, req.Rounds, result.ToolCalls); len(fixed) > 0 && a.Logger != nil {
		// The IDs only: a call's arguments may be private.
		a.Logger.Info("Tool call IDs were empty or repeated; replaced them", "session", req.Session.WorkflowID(), "turn", req.TurnID, "step", req.Step, "model", req.Model, "calls", len(result.ToolCalls), "replaced", fixed)
	}
	for i := range result.ToolCalls {
		a.Tools.declare(&result.ToolCalls[i])
	}
	if len(result.ToolCalls) == 0 {
		// The turn's final answer: the transcript keeps the user's text
		// and this reply (tool rounds stay within the turn), without the
		// late note, which is for the chat only.
		now := time.Now()
		if err := a.remember(turnCtx, transcriptID, full, answer.Text, now); err != nil {
			return pipeline.TurnResult{}, fmt.Errorf("save the turn of %s: %w", req.Session.WorkflowID(), err)
		}
		result.Reply = a.withStaleNote(req, result.Shown, answer.Text, now)
	}
	a.clearSilentTurn(ctx, out, req, result)
	return result, nil
}

// answeredWithoutModel ends a step the activity answers itself, without
// the model: nothing is counted and nothing written to the transcript.
func (a *Activities) answeredWithoutModel(ctx context.Context, out adapters.Outbound, req pipeline.TurnRequest, result pipeline.TurnResult) (pipeline.TurnResult, error) {
	// A /new the session asked of this step still happens: the session
	// does not ask again.
	if req.NewTranscript && a.Store != nil {
		if _, err := a.Store.StartTranscript(ctx, req.Session.WorkflowID(), req.TurnID); err != nil {
			return pipeline.TurnResult{}, fmt.Errorf("start a new transcript for %s: %w", req.Session.WorkflowID(), err)
		}
	}
	a.clearSilentTurn(ctx, out, req, result)
	return result, nil
}

// stoppedByTheSession: the attempt was cancelled by the session (/stop,
// an interrupt), not timed out nor cut short by its worker stopping (the
// step is retried then, and its preview goes on).
func stoppedByTheSession(ctx context.Context) bool {
	if !errors.Is(ctx.Err(), context.Canceled) {
		return false
	}
	select {
	case <-activity.GetWorkerStopChannel(ctx):
		return false
	default:
		return true
	}
}

// workerStopped: the attempt's context ended while its worker stops (the
// shutdown grace ran out), which says nothing about the model.
func workerStopped(ctx context.Context) bool {
	if ctx.Err() == nil {
		return false
	}
	select {
	case <-activity.GetWorkerStopChannel(ctx):
		return true
	default:
		return false
	}
}

// workerStoppedError is the ApplicationError of an attempt cut short by
// its worker stopping: of type ErrWorkerStopped, never a model error type
// (which would cool the model down and fall back), and non-retryable, so
// that the workflow asks the same model again as after a lost worker.
// What a stream showed rides in the details, as with modelError.
func workerStoppedError(req pipeline.TurnRequest, err error, shown *pipeline.Shown) error {
	msg := fmt.Sprintf("model %s for %s (turn %s) was cut short: its worker is stopping (the shutdown grace ran out); the session asks the same model again on another worker: %v",
		req.Model, req.Session.WorkflowID(), req.TurnID, err)
	opts := temporal.ApplicationErrorOptions{NonRetryable: true, Cause: err}
	if shown != nil {
		opts.Details = []any{shown}
	}
	return temporal.NewApplicationErrorWithOptions(msg, pipeline.ErrWorkerStopped, opts)
}

// modelError is the ApplicationError of a failed model attempt: its type
// from the taxonomy, the provider's retry-after as NextRetryDelay, and
// non-retryable where waiting cannot help. The workflow reads the type to
// fall back, cool the model down, or reset the session. What a stream
// showed before it failed rides in the details: the next model edits the
// same preview, or continues after the blocks.
func modelError(req pipeline.TurnRequest, err error, shown *pipeline.Shown) error {
	typ, retryAfter := pipeline.ErrOverloaded, time.Duration(0)
	var me *models.Error
	if errors.As(err, &me) {
		typ, retryAfter = me.Type, me.RetryAfter
	}
	msg := fmt.Sprintf("model %s failed for %s (turn %s): %v", req.Model, req.Session.WorkflowID(), req.TurnID, err)
	opts := temporal.ApplicationErrorOptions{
		NonRetryable:   !pipeline.Transient(typ),
		NextRetryDelay: retryAfter,
		Cause:          err,
	}
	if shown != nil {
		opts.Details = []any{shown}
	}
	return temporal.NewApplicationErrorWithOptions(msg, typ, opts)
}

// Deliver sends one reply chunk and returns the platform's message ID. A
// chunk the store already maps to a platform message was sent before (an
// attempt that sent it but failed to report, on this worker or one that
// stopped): its ID is returned and nothing is sent again. A chunk that
// replaces a streamed preview edits it, or, when the preview was
// deleted, is sent as a new message whose ID is returned.
func (a *Activities) Deliver(ctx context.Context, d pipeline.Delivery) (pipeline.Delivered, error) {
	out, err := a.outbound(d.Session.Channel)
	if err != nil {
		return pipeline.Delivered{}, err
	}
	var rest []string
	d = a.withLateNote(d, time.Now())
	if d.Whole {
		d, rest = a.firstChunk(d)
	}
	id, sent, err := a.claimSend(ctx, d)
	if err != nil {
		return pipeline.Delivered{}, err
	}
	if !sent && d.Replaces != "" {
		// The streamed preview becomes the chunk: an edit is idempotent,
		// so a retry edits it again rather than posting a copy. A
		// preview someone deleted meanwhile is refused for good: the
		// chunk then goes out as a new message under its own key (sent
		// below), and the ledger records that message.
		edit := pipeline.Edit{Session: d.Session, PlatformMessageID: d.Replaces, ThreadID: d.ThreadID, Text: d.Text, Buttons: d.Buttons}
		switch err := out.Edit(ctx, edit); {
		case err == nil:
			id, sent = d.Replaces, true
			a.mapMessage(ctx, d, id)
		case adapters.MessageGone(err):
			a.Logger.Info("The preview is gone (deleted); sending the chunk as a new message", "session", d.Session.WorkflowID(), "preview_id", d.Replaces, "internal_id", d.IdempotencyKey)
		default:
			a.releaseSend(ctx, d)
			return pipeline.Delivered{}, platformError(fmt.Sprintf("deliver chunk %d/%d of %s over its preview %s", d.Index+1, d.Total, d.Session.WorkflowID(), d.Replaces), err)
		}
	}
	if !sent {
		if id, err = out.Send(adapters.WithSendMargin(ctx, sendMargin), d); err != nil {
			a.releaseSend(ctx, d)
			return pipeline.Delivered{}, platformError(fmt.Sprintf("deliver chunk %d/%d of %s", d.Index+1, d.Total, d.Session.WorkflowID()), err)
		}
		a.mapMessage(ctx, d, id)
	}
	reactionsFailed := a.thenReact(ctx, out, d)
	if d.Index == d.Total-1 {
		// The reply's last chunk is out: its voice reply, where the chat
		// has them, is sent once under a key of its own.
		if err := a.speak(ctx, out, d); err != nil {
			return pipeline.Delivered{}, err
		}
	}
	return pipeline.Delivered{PlatformMessageID: id, ReactionsFailed: reactionsFailed, Rest: rest}, nil
}

// firstChunk cuts a whole reply with its platform's rules: the delivery
// of its first chunk, and the chunks after it. The reactions a reply's
// last chunk sets wait for the last chunk when there are more.
func (a *Activities) firstChunk(d pipeline.Delivery) (pipeline.Delivery, []string) {
	chunks := a.chunker(d.Session.Channel).Chunk(d.Text, a.chunkLimit(d.Session))
	if len(chunks) == 0 {
		chunks = []string{d.Text}
	}
	d.Whole, d.Text, d.Index, d.Total = false, chunks[0], 0, len(chunks)
	if len(chunks) > 1 {
		d.ThenReact = nil
	}
	return d, chunks[1:]
}

// ledgerWriteBudget bounds the delivery ledger's write after a send: it
// runs on a context of its own, because the attempt's may end (its
// deadline) while the platform call completes, and a send left out of
// the ledger is sent again by the retry.
const ledgerWriteBudget = 5 * time.Second

// mapMessage records a delivered chunk in the delivery ledger (the
// store's message map), even when the attempt's context ended as the
// send completed. The chunk is out: a failed mapping is logged, and must
// not fail the delivery into sending it again.
func (a *Activities) mapMessage(ctx context.Context, d pipeline.Delivery, platformID string) {
	a.recordSent(ctx, d.Session, d.IdempotencyKey, platformID)
}

// recordSent writes one ledger entry with ledgerWriteBudget of its own.
func (a *Activities) recordSent(attempt context.Context, session pipeline.SessionKey, internalID, platformID string) {
	if a.Store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(attempt), ledgerWriteBudget)
	defer cancel()
	if err := a.Store.MapMessage(ctx, session.WorkflowID(), internalID, platformID); err != nil {
		a.Logger.Warn("Sent message not recorded in the delivery ledger; a retry may send it again (is the store reachable? REPLYFLOW_STORE_DSN)", "session", session.WorkflowID(), "internal_id", internalID, "error", err)
	}
}

// thenReactBudget bounds the reactions a delivery sets after its chunk.
const thenReactBudget = 2 * time.Second

// thenReact sets the reactions a delivery carries, once its chunk is out,
// and names those the platform refused (the session sets them again its
// own way). A reaction is a courtesy: it never fails the delivery.
func (a *Activities) thenReact(ctx context.Context, out adapters.Outbound, d pipeline.Delivery) []string {
	var failed []string
	// The chunk is out and must be reported as delivered: the reactions
	// get at most half of what is left of the attempt (a platform that
	// paces reactions, as Discord does, could otherwise time the attempt
	// out, and every retry after it), and those not set by then are left
	// to the session.
	budget := thenReactBudget
	if deadline, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(deadline)/2)
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	for _, r := range d.ThenReact {
		if ctx.Err() != nil {
			failed = append(failed, r.MessageID)
			continue
		}
		if err := out.SetReaction(ctx, r); err != nil {
			a.Logger.Warn("Reaction carried by a delivery not set; the session sets it again", "session", d.Session.WorkflowID(), "message_id", r.MessageID, "state", r.State, "error", err)
			failed = append(failed, r.MessageID)
		}
	}
	return failed
}

// sentBefore looks the chunk's idempotency key up in the store's message
// map. It does so on every attempt, not only on retries (Attempt > 1): a
// parked delivery resumed by `replyflow retry`, or a workflow reset, starts
// a new activity at attempt 1 with the same key, and one indexed read is
// small beside the platform call it may save. A store that cannot answer
// fails the attempt, to be retried: sending blind could send the chunk twice.
func (a *Activities) claimSend(ctx context.Context, d pipeline.Delivery) (string, bool, error) {
	if a.Store == nil || d.IdempotencyKey == "" {
		return "", false, nil
	}
	now := time.Now()
	id, held, err := a.Store.ClaimSend(ctx, d.Session.WorkflowID(), d.IdempotencyKey, claimUntil(ctx, now))
	switch {
	case err != nil:
		return "", false, temporal.NewApplicationErrorWithCause(
			fmt.Sprintf("deliver chunk %d/%d of %s: could not check whether it was sent already (is the store reachable? REPLYFLOW_STORE_DSN): %v", d.Index+1, d.Total, d.Session.WorkflowID(), err),
			"StoreUnavailable", err)
	case id != "":
		a.Logger.Info("Chunk was sent before; not sending it again", "session", d.Session.WorkflowID(), "internal_id", d.IdempotencyKey, "platform_id", id)
		return id, true, nil
	case !held.IsZero():
		// An attempt that timed out on the session's side may still be
		// sending it, or recording that it did (the first chunk's local
		// activity is given up at its deadline, its goroutine is not).
		wait := max(held.Sub(now), time.Second)
		a.Logger.Info("Chunk is being sent by another attempt; waiting it out", "session", d.Session.WorkflowID(), "internal_id", d.IdempotencyKey, "retry_in", wait.Round(time.Millisecond))
		return "", false, temporal.NewApplicationErrorWithOptions(
			fmt.Sprintf("deliver chunk %d/%d of %s: another attempt is sending it now (its claim holds until %s); this attempt is retried after it rather than send the chunk twice",
				d.Index+1, d.Total, d.Session.WorkflowID(), held.UTC().Format(time.RFC3339)),
			errDeliveryInFlight, temporal.ApplicationErrorOptions{NextRetryDelay: wait})
	}
	return "", false, nil
}

// errDeliveryInFlight is the error type of a delivery attempt that found
// another attempt sending the same chunk: retryable, after that one.
const errDeliveryInFlight = "DeliveryInFlight"

// claimHoldWithoutDeadline is how long a claim holds when the attempt
// has no deadline of its own (a test, a caller outside Temporal).
const claimHoldWithoutDeadline = time.Minute

// sendMargin is what a send needs of its attempt's time once its turn in
// the chat's delivery budget comes: the budget refuses a longer wait, so
// no send starts so late that the deadline cuts it after the platform
// took it.
const sendMargin = 2 * time.Second

// claimRecordMargin is how long past its attempt's deadline a claim
// holds: time for the ledger write that follows a send cut close to the
// deadline (a write usually takes milliseconds; recordSent allows up to
// ledgerWriteBudget), and for the clocks of two workers to differ. It is
// also what a worker's crash in the middle of a send adds to the retry's
// wait, so it is not the whole of ledgerWriteBudget.
const claimRecordMargin = 2 * time.Second

// claimUntil is how long an attempt's claim on a chunk holds.
func claimUntil(ctx context.Context, now time.Time) time.Time {
	if deadline, ok := ctx.Deadline(); ok {
		return deadline.Add(claimRecordMargin)
	}
	return now.Add(claimHoldWithoutDeadline)
}

// releaseSend gives back the claim on a chunk an attempt did not send,
// so the next attempt sends it at once; with a budget of its own, since
// the attempt's may be spent. A claim not given back runs out by itself.
func (a *Activities) releaseSend(attempt context.Context, d pipeline.Delivery) {
	if a.Store == nil || d.IdempotencyKey == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(attempt), ledgerWriteBudget)
	defer cancel()
	if err := a.Store.ReleaseSend(ctx, d.Session.WorkflowID(), d.IdempotencyKey); err != nil {
		a.Logger.Warn("Claim on an unsent chunk not given back; the next attempt waits until it runs out", "session", d.Session.WorkflowID(), "internal_id", d.IdempotencyKey, "error", err)
	}
}

// EditMessage replaces the text and buttons of a bot message (a decided
// proposal).
func (a *Activities) EditMessage(ctx context.Context, e pipeline.Edit) error {
	out, err := a.outbound(e.Session.Channel)
	if err != nil {
		return err
	}
	if err := out.Edit(ctx, e); err != nil {
		return platformError(fmt.Sprintf("edit message %s in %s", e.PlatformMessageID, e.Session.WorkflowID()), err)
	}
	return nil
}

// SetReaction sets a user message's reaction to a state, or clears it.
func (a *Activities) SetReaction(ctx context.Context, r pipeline.ReactionChange) error {
	out, err := a.outbound(r.Session.Channel)
	if err != nil {
		return err
	}
	if err := out.SetReaction(ctx, r); err != nil {
		return platformError(fmt.Sprintf("set reaction %q on %s in %s", r.State, r.MessageID, r.Session.WorkflowID()), err)
	}
	return nil
}

func (a *Activities) outbound(channel string) (adapters.Outbound, error) {
	out, ok := a.Outbound[channel]
	if !ok {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("no outbound adapter for channel %q on this worker: enable the channel in the worker's configuration, then retry", channel),
			"ChannelNotConfigured", nil)
	}
	return out, nil
}

// platformError turns a classified adapter error into the Temporal error
// that retries it the right way: after the platform's retry-after when rate
// limited, never when permanent.
func platformError(what string, err error) error {
	kind, retryAfter := adapters.Classify(err)
	msg := what + ": " + err.Error()
	switch kind {
	case adapters.Permanent:
		return temporal.NewNonRetryableApplicationError(msg, "PlatformRejected", err)
	case adapters.RateLimited:
		return temporal.NewApplicationErrorWithOptions(msg, "RateLimited", temporal.ApplicationErrorOptions{Cause: err, NextRetryDelay: retryAfter})
	}
	return temporal.NewApplicationErrorWithCause(msg, "PlatformUnavailable", err)
}
