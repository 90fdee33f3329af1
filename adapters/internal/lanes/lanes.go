// Package lanes runs an adapter's inbound hand-offs concurrently across
// chats and in order within each: a gateway that handed events to Temporal
// one at a time falls behind under load (50-100 ms each), and the platform
// then redelivers, or, where it gives up, loses them. It holds no
// platform code.
package lanes

import (
	"context"
	"sync"
)

// Lanes runs jobs, one lane per key: a lane's jobs run one after another,
// in the order Go was called for them; at most `lanes` lanes run at once,
// and at most `queued` jobs wait in all. Go blocks while that many wait
// (the caller, reading from the platform, then stops reading: Slack and
// Discord hold or redeliver what was not read), so nothing here grows
// without bound.
type Lanes struct {
	slots   chan struct{} // one per running lane
	waiting chan struct{} // one per job not yet finished

	mu     sync.Mutex
	queues map[string][]func()
	wg     sync.WaitGroup
}

// New makes Lanes running at most lanes lanes at once with at most queued
// jobs not yet finished (both at least 1).
func New(lanes, queued int) *Lanes {
	return &Lanes{
		slots:   make(chan struct{}, max(lanes, 1)),
		waiting: make(chan struct{}, max(queued, 1)),
		queues:  map[string][]func(){},
	}
}

// Go queues job on key's lane. It returns ctx's error, without queueing,
// when ctx ends while the queue is full.
func (l *Lanes) Go(ctx context.Context, key string, job func()) error {
	select {
	case l.waiting <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	l.mu.Lock()
	q, running := l.queues[key]
	l.queues[key] = append(q, job)
	l.mu.Unlock()
	if running {
		return nil // the lane's runner takes it after the ones before
	}
	l.wg.Add(1)
	go l.drain(key)
	return nil
}

// drain runs key's jobs until its queue is empty, holding a slot.
func (l *Lanes) drain(key string) {
	defer l.wg.Done()
	l.slots <- struct{}{}
	defer func() { <-l.slots }()
	for {
		l.mu.Lock()
		q := l.queues[key]
		if len(q) == 0 {
			delete(l.queues, key)
			l.mu.Unlock()
			return
		}
		job := q[0]
		l.queues[key] = q[1:]
		l.mu.Unlock()
		job()
		<-l.waiting
	}
}

// Wait returns when every queued job has run.
func (l *Lanes) Wait() { l.wg.Wait() }
