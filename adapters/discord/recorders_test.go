package discord

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/internal/changes"
)

// logs records log lines ("LEVEL message key=value ...").
type logs struct {
	mu    sync.Mutex
	feed  changes.Feed
	lines []string
	attrs []slog.Attr
}

func (l *logs) Enabled(context.Context, slog.Level) bool { return true }
func (l *logs) WithGroup(string) slog.Handler            { return l }
func (l *logs) WithAttrs(as []slog.Attr) slog.Handler {
	return &logView{logs: l, attrs: as}
}

func (l *logs) Handle(_ context.Context, r slog.Record) error { return l.add(nil, r) }

func (l *logs) add(extra []slog.Attr, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	for _, a := range extra {
		b.WriteString(" " + a.String())
	}
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	l.mu.Lock()
	l.lines = append(l.lines, b.String())
	l.mu.Unlock()
	l.feed.Touch()
	return nil
}

type logView struct {
	*logs
	attrs []slog.Attr
}

func (v *logView) WithAttrs(as []slog.Attr) slog.Handler {
	return &logView{logs: v.logs, attrs: append(slices.Clone(v.attrs), as...)}
}
func (v *logView) Handle(_ context.Context, r slog.Record) error { return v.add(v.attrs, r) }

// with are the lines containing every part.
func (l *logs) with(parts ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}

func (l *logs) waitFor(t *testing.T, parts ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	if err := l.feed.WaitFor(ctx, "logs", func() bool { return len(l.with(parts...)) > 0 }); err != nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		t.Fatalf("no log line with %q: %v\n%s", parts, err, strings.Join(l.lines, "\n"))
	}
	return l.with(parts...)[0]
}

// health records what the gateway reports.
type health struct {
	mu   sync.Mutex
	feed changes.Feed
	last adapters.Health
	all  []adapters.Health
}

func (h *health) Report(channel string, s adapters.Health) {
	h.mu.Lock()
	h.last = s
	h.all = append(h.all, s)
	h.mu.Unlock()
	h.feed.Touch()
}

func (h *health) waitFor(t *testing.T, what string, cond func(adapters.Health) bool) adapters.Health {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	var got adapters.Health
	err := h.feed.WaitFor(ctx, "health", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		got = h.last
		return cond(got)
	})
	if err != nil {
		t.Fatalf("%s: health is %+v: %v", what, got, err)
	}
	return got
}
