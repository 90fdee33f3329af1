package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"go.temporal.io/sdk/activity"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// Streaming defaults; the worker's configuration may change them.
const (
	defaultPreviewFirstAfter = time.Second
	defaultPreviewEvery      = time.Second
	defaultBlockIdle         = time.Second
	defaultBlockPause        = 600 * time.Millisecond
	blockMin, blockMax       = 800, 1200
)

// Streaming is how the worker shows answers while they are written.
type Streaming struct {
	// Mode is the default (REPLYFLOW_STREAM); ByChannel overrides it.
	Mode      pipeline.StreamMode
	ByChannel map[string]pipeline.StreamMode
	// Pacing spaces the preview's edits; BlockIdle sends a block's
	// pending text after that long without new text; BlockPause is the
	// least time between two blocks, as a person pauses between
	// messages.
	Pacing     pipeline.PreviewPacing
	BlockIdle  time.Duration
	BlockPause time.Duration
}

func (s Streaming) mode(channel string) pipeline.StreamMode {
	if m, ok := s.ByChannel[channel]; ok {
		return m
	}
	if s.Mode == "" {
		return pipeline.StreamOff
	}
	return s.Mode
}

func (s Streaming) withDefaults() Streaming {
	if s.Pacing.FirstAfter <= 0 {
		s.Pacing.FirstAfter = defaultPreviewFirstAfter
	}
	if s.Pacing.Every <= 0 {
		s.Pacing.Every = defaultPreviewEvery
	}
	if s.BlockIdle <= 0 {
		s.BlockIdle = defaultBlockIdle
	}
	if s.BlockPause < 0 {
		s.BlockPause = 0
	} else if s.BlockPause == 0 {
		s.BlockPause = defaultBlockPause
	}
	return s
}

// streamModeOf is the mode a step streams in: off unless the session
// allows it and the model can stream; an earlier attempt's mode wins, so
// a preview is finished as a preview after the configuration changed.
func (a *Activities) streamModeOf(req pipeline.TurnRequest, model models.Model) pipeline.StreamMode {
	if _, ok := model.(models.Streamer); !ok || !req.Stream {
		return pipeline.StreamOff
	}
	if req.Shown != nil && req.Shown.Mode != "" {
		return req.Shown.Mode
	}
	return a.Streaming.mode(req.Session.Channel)
}

// liveAnswer is what a streaming step has shown so far. keepAlive
// heartbeats it, so the attempt that follows a crash knows it.
type liveAnswer struct {
	mu    sync.Mutex
	shown pipeline.Shown
}

func (l *liveAnswer) update(f func(*pipeline.Shown)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f(&l.shown)
}

// snapshot is a copy of what was shown, nil when nothing was.
func (l *liveAnswer) snapshot() *pipeline.Shown {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shown.Empty() {
		return nil
	}
	s := l.shown
	s.Blocks = append([]string(nil), s.Blocks...)
	return &s
}

// previewing: a preview message exists (typing is no longer shown).
func (l *liveAnswer) previewing() bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.shown.PreviewID != ""
}

// shownBefore is what earlier attempts of this step showed: what the
// session passed on (a failed attempt's heartbeat or details), or what
// the store recorded as each was sent, whichever went further (a worker
// that died before its heartbeat reached Temporal).
func (a *Activities) shownBefore(ctx context.Context, req pipeline.TurnRequest) *pipeline.Shown {
	best := req.Shown
	if a.Store == nil {
		return best
	}
	data, err := a.Store.Shown(ctx, req.Session.WorkflowID(), shownKey(req))
	if err != nil {
		a.Logger.Warn("What an earlier attempt streamed could not be read; going by the session's record", "session", req.Session.WorkflowID(), "turn_id", req.TurnID, "error", err)
		return best
	}
	var recorded pipeline.Shown
	if data == "" || json.Unmarshal([]byte(data), &recorded) != nil || recorded.Empty() {
		return best
	}
	if best == nil || len(recorded.Blocks) > len(best.Blocks) || (best.PreviewID == "" && recorded.PreviewID != "") {
		return &recorded
	}
	return best
}

// shownKey is the store's key of a step's stream.
func shownKey(req pipeline.TurnRequest) string { return fmt.Sprintf("%s/%d", req.TurnID, req.Step) }

// record keeps what was shown in the store at once, and heartbeats it.
// The write has a context of its own (as the delivery ledger's): a
// preview or block whose send completed as the attempt ended is on
// screen, and the next attempt must know it.
func (p *presenter) record() {
	if p.a.Store != nil {
		if shown := p.live.snapshot(); shown != nil {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(p.ctx), ledgerWriteBudget)
			defer cancel()
			if err := p.a.Store.SaveShown(ctx, p.req.Session.WorkflowID(), shownKey(p.req), mustJSON(shown)); err != nil {
				p.a.Logger.Warn("What the stream showed was not recorded; a crash now could show it twice", "session", p.req.Session.WorkflowID(), "turn_id", p.req.TurnID, "error", err)
			}
		}
	}
	p.live.heartbeat(p.ctx)
}

// heartbeat records a heartbeat carrying what was shown. The SDK sends
// it at once unless one went out within the worker's heartbeat throttle
// (workers.New keeps that to a second).
func (l *liveAnswer) heartbeat(ctx context.Context) {
	if shown := l.snapshot(); shown != nil {
		activity.RecordHeartbeat(ctx, shown)
		return
	}
	activity.RecordHeartbeat(ctx)
}

// presenter shows one streaming step's answer on the platform.
type presenter struct {
	a    *Activities
	ctx  context.Context // the activity's: heartbeats
	out  adapters.Outbound
	req  pipeline.TurnRequest
	live *liveAnswer
	cfg  Streaming
	mode pipeline.StreamMode
	// prefix is what an earlier attempt sent as blocks: the model is
	// asked to continue after it, and the answer starts with it.
	prefix string
	limit  int

	start, lastText, lastPreview time.Time
	previewBroken                bool
	// shownText is the preview's text now; pendingPreview what it will
	// show at its next edit.
	shownText, pendingPreview string

	answerText string // the whole answer so far

	blocks pipeline.BlockCoalescer
	fed    int // bytes of the answer given to the coalescer
	// queued are the blocks waiting for their pause: at most
	// MaxStreamBlocks less those sent, each waiting at most BlockPause
	// after the one before.
	queued    []queuedBlock
	lastBlock time.Time
	sent      int
	// blocksOff: no more blocks this attempt (one was refused, too long
	// for one message, or past MaxStreamBlocks); the rest of the answer
	// goes with the final delivery, so no later block may go before it.
	blocksOff bool
}

type queuedBlock struct {
	text string
	end  int // the answer's byte offset the block ends at
}

// stream runs one model step with the answer shown as it is written, and
// returns the model's completion with Text the whole answer (after what
// an earlier attempt sent). The model streams in its own goroutine; this
// one shows the text, paced, and owns every platform call.
func (a *Activities) stream(ctx, turnCtx context.Context, out adapters.Outbound, req pipeline.TurnRequest, model models.Streamer, prompt models.Prompt, mode pipeline.StreamMode, live *liveAnswer) (models.Completion, error) {
	p := &presenter{a: a, ctx: ctx, out: out, req: req, live: live, cfg: a.Streaming.withDefaults(), mode: mode, limit: a.chunkLimit(req.Session), start: time.Now()}
	p.blocks = pipeline.BlockCoalescer{Min: blockMin, Max: blockMax}
	before := a.shownBefore(ctx, req)
	live.update(func(s *pipeline.Shown) {
		if before != nil {
			*s = *before
			s.Blocks = append([]string(nil), before.Blocks...)
		}
		s.Mode = mode
	})
	if before != nil {
		p.sent = len(before.Blocks)
	}
	if mode == pipeline.StreamBlocks && before != nil && before.Text != "" {
		p.prefix = before.Text
		p.lastBlock = time.Now()
		// The answer so far as the start of the model's own: it goes on
		// from there instead of starting over (providers reject a
		// prefill that ends in white space).
		prompt.Messages = append(prompt.Messages, models.Message{Role: "assistant", Text: strings.TrimRightFunc(p.prefix, unicode.IsSpace)})
	}
	p.fed = len(p.prefix)

	var (
		mu     sync.Mutex
		latest string
	)
	changed := make(chan struct{}, 1)
	type outcome struct {
		completion models.Completion
		err        error
	}
	done := make(chan outcome, 1)
	go func() {
		c, err := model.Stream(turnCtx, prompt, func(text string) {
			mu.Lock()
			latest = text
			mu.Unlock()
			select {
			case changed <- struct{}{}:
			default:
			}
		})
		done <- outcome{c, err}
	}()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var raw string
	for {
		select {
		case <-changed:
			mu.Lock()
			raw = latest
			mu.Unlock()
			p.grew(turnCtx, p.answer(raw))
		case <-timer.C:
			p.tick(turnCtx, p.answer(raw))
		case o := <-done:
			if o.err == nil {
				mu.Lock()
				raw = latest
				mu.Unlock()
				o.completion.Text = strings.TrimSpace(p.answer(raw))
			}
			return o.completion, o.err
		}
		if wait, ok := p.nextWake(); ok {
			timer.Reset(wait)
		}
	}
}

// answer is the whole answer so far: what was sent before, then what the
// model wrote in this attempt.
func (p *presenter) answer(raw string) string {
	return p.prefix + strings.TrimLeftFunc(raw, unicode.IsSpace)
}

// grew takes new text.
func (p *presenter) grew(ctx context.Context, answer string) {
	p.lastText, p.answerText = time.Now(), answer
	if _, ok := pipeline.Showable(answer); !ok {
		return
	}
	switch p.mode {
	case pipeline.StreamPreview:
		p.showPreview(ctx, answer)
	case pipeline.StreamBlocks:
		if len(answer) > p.fed && !p.blocksOff {
			delta := answer[p.fed:]
			p.fed = len(answer)
			for _, b := range p.blocks.Push(delta) {
				p.queue(b)
			}
			// Held text past one message (a code fence not closed yet)
			// can only end as a block too long to send: the rest goes
			// with the final delivery, and the coalescer, which scans
			// what it holds at each delta, is fed no more (a long open
			// fence would cost time growing with its square).
			if utf8.RuneCountInString(p.blocks.Pending()) > p.limit {
				p.blocksOff = true
			}
		}
		p.sendQueued(ctx)
	}
}

// tick is a timer: the preview's next edit is due, a block's pause is
// over, or no text came for BlockIdle.
func (p *presenter) tick(ctx context.Context, answer string) {
	p.answerText = answer
	if _, ok := pipeline.Showable(answer); !ok {
		return
	}
	switch p.mode {
	case pipeline.StreamPreview:
		p.showPreview(ctx, answer)
	case pipeline.StreamBlocks:
		if len(p.queued) == 0 && time.Since(p.lastText) >= p.cfg.BlockIdle {
			if b, ok := p.blocks.Flush(); ok {
				p.queue(b)
			}
		}
		p.sendQueued(ctx)
	}
}

func (p *presenter) queue(b pipeline.Block) {
	// A code block longer than a message (the coalescer holds a fence
	// whole) is left to the final delivery, which chunks it fence-safe.
	if p.sent+len(p.queued) >= pipeline.MaxStreamBlocks || utf8.RuneCountInString(b.Text) > p.limit {
		p.blocksOff = true
	}
	if p.blocksOff {
		return
	}
	p.queued = append(p.queued, queuedBlock{text: b.Text, end: len(p.prefix) + b.End})
}

// nextWake is when tick should run next, false for only on new text.
func (p *presenter) nextWake() (time.Duration, bool) {
	now := time.Now()
	switch p.mode {
	case pipeline.StreamPreview:
		if p.previewBroken || p.shownText == p.pendingPreview {
			return 0, false
		}
		next := p.start.Add(p.cfg.Pacing.FirstAfter)
		if !p.lastPreview.IsZero() {
			next = p.lastPreview.Add(p.cfg.Pacing.Every)
		}
		return max(next.Sub(now), time.Millisecond), true
	case pipeline.StreamBlocks:
		if len(p.queued) > 0 {
			return max(p.lastBlock.Add(p.cfg.BlockPause).Sub(now), time.Millisecond), true
		}
		if p.blocks.Pending() != "" {
			return max(p.lastText.Add(p.cfg.BlockIdle).Sub(now), time.Millisecond), true
		}
	}
	return 0, false
}
