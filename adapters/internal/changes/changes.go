// Package changes lets the fake platform servers (telegramtest,
// slacktest) wake whoever waits for their state to change: a test's
// WaitFor, a long poll. It holds no platform code.
package changes

import (
	"context"
	"fmt"
	"sync"
)

// Feed is closed and replaced on every change. The zero value is ready.
type Feed struct {
	mu sync.Mutex
	ch chan struct{}
}

// Changed is closed at the next Touch.
func (f *Feed) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ch == nil {
		f.ch = make(chan struct{})
	}
	return f.ch
}

// Touch wakes everyone waiting on Changed.
func (f *Feed) Touch() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ch != nil {
		close(f.ch)
	}
	f.ch = make(chan struct{})
}

// WaitFor returns once cond holds, checking it after every Touch, or an
// error naming who waited (e.g. "slacktest") when ctx ends first.
func (f *Feed) WaitFor(ctx context.Context, who string, cond func() bool) error {
	for {
		changed := f.Changed()
		if cond() {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("%s: condition not met: %w", who, ctx.Err())
		}
	}
}
