package discord

import (
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
)

// A lane is one Discord channel's queue (a thread is a channel of its
// own) and the goroutine that empties it, in order: a channel's messages
// reach the Sink in the order Discord sent them, while a slow channel
// holds up no other. What the lanes hold is bounded (tuning: laneCapacity
// events a channel, maxLanes channels); a message that finds no room is
// not dropped but left to a fetch of the channel's history, which Discord
// keeps: the lane switches to fetching, and the messages that arrive
// meanwhile are not queued (the fetch hands them, in order).
type lane struct {
	id    string
	queue chan item
	wake  chan struct{} // a fetch was asked for

	// Guarded by lanes.mu.
	senders int
	fetch   *fetchRequest

	// handedUpTo is the highest message ID a history fetch handed on: a
	// queued copy at or below it is not handed twice. Only the lane's
	// goroutine touches it.
	handedUpTo uint64
	backoff    time.Duration
}

// item is a queued event: a message or a reaction.
type item struct {
	msg      *discordgo.Message
	reaction *Reaction
	at       time.Time
}

// fetchRequest asks a lane to hand the channel's messages with IDs above
// after, oldest first.
type fetchRequest struct {
	after uint64
	// limit is the most messages to hand; 0 until caught up.
	limit int
	// first: before the queued events (a catch-up after READY, whose
	// messages are older than anything queued since); else once the
	// queue is empty (the queue then holds what came before).
	first     bool
	notBefore time.Time
	why       string
}

func (f *fetchRequest) merge(g fetchRequest) {
	f.after = min(f.after, g.after)
	f.first = f.first || g.first
	if f.limit == 0 || g.limit == 0 {
		f.limit = 0
	} else {
		f.limit = max(f.limit, g.limit)
	}
	if g.notBefore.Before(f.notBefore) {
		f.notBefore = g.notBefore
	}
	if f.why != g.why {
		f.why += ", " + g.why
	}
}

type lanes struct {
	r     *Receiver
	slots chan struct{} // one per lane: maxLanes

	mu      sync.Mutex
	byID    map[string]*lane
	gate    chan struct{} // closed while lanes may work
	gateGen int
	pending int // events queued and not yet handled, for the drain

	wg sync.WaitGroup
}

func newLanes(r *Receiver) *lanes {
	open := make(chan struct{})
	close(open)
	return &lanes{r: r, slots: make(chan struct{}, r.tune.maxLanes), byID: map[string]*lane{}, gate: open}
}

// enqueue queues an event in its channel's lane, waiting at most
// enqueueWait for room. A message that finds none is left to a history
// fetch; a reaction is lost, and logged.
func (ls *lanes) enqueue(channelID string, it item) {
	log := ls.r.logger
	l := ls.acquire(channelID, ls.r.tune.enqueueWait)
	if l == nil {
		if it.msg != nil {
			log.Error("Discord message not queued: too many channels are waiting for the sink; it is lost unless the catch-up at the next READY finds it",
				"discord_channel", channelID, "message", it.msg.ID, "busy_channels", ls.r.tune.maxLanes)
		} else {
			log.Error("Discord reaction lost: too many channels are waiting for the sink", "discord_channel", channelID, "reacted_message", it.reaction.MessageID)
		}
		return
	}
	defer ls.release(l)
	if it.msg != nil && ls.fetchWillHand(l, snowflakeValue(it.msg.ID)) {
		return
	}
	if ls.put(l, it) {
		return
	}
	if it.msg == nil {
		log.Error("Discord reaction lost: its channel's queue is full", "discord_channel", channelID, "reacted_message", it.reaction.MessageID, "waited", ls.r.tune.enqueueWait)
		return
	}
	log.Warn("Discord channel's queue is full: its messages are fetched from its history once the queue has drained",
		"discord_channel", channelID, "message", it.msg.ID, "queued", ls.r.tune.laneCapacity)
	ls.request(l, fetchRequest{after: snowflakeValue(it.msg.ID) - 1, why: "queue full"})
}

// put queues it, waiting up to enqueueWait for room.
func (ls *lanes) put(l *lane, it item) bool {
	ls.count(1)
	select {
	case l.queue <- it:
		return true
	default:
	}
	t := time.NewTimer(ls.r.tune.enqueueWait)
	defer t.Stop()
	select {
	case l.queue <- it:
		return true
	case <-t.C:
	case <-ls.r.ctx.Done():
	}
	ls.count(-1)
	return false
}

func (ls *lanes) count(n int) {
	ls.mu.Lock()
	ls.pending += n
	ls.mu.Unlock()
}

// acquire returns the channel's lane, starting one if there is none,
// waiting up to wait for a free slot; nil when none freed. The caller
// releases it.
func (ls *lanes) acquire(channelID string, wait time.Duration) *lane {
	ls.mu.Lock()
	if l := ls.byID[channelID]; l != nil {
		l.senders++
		ls.mu.Unlock()
		return l
	}
	ls.mu.Unlock()
	if !ls.slot(wait) {
		return nil
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l := ls.byID[channelID]
	if l != nil {
		<-ls.slots // another sender started it meanwhile
	} else {
		l = &lane{id: channelID, queue: make(chan item, ls.r.tune.laneCapacity), wake: make(chan struct{}, 1)}
		ls.byID[channelID] = l
		ls.wg.Add(1)
		go ls.work(l)
	}
	l.senders++
	return l
}

// slot takes a lane slot, waiting up to wait for one.
func (ls *lanes) slot(wait time.Duration) bool {
	select {
	case ls.slots <- struct{}{}:
		return true
	default:
	}
	if wait <= 0 {
		return false
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case ls.slots <- struct{}{}:
		return true
	case <-t.C:
	case <-ls.r.ctx.Done():
	}
	return false
}

func (ls *lanes) release(l *lane) {
	ls.mu.Lock()
	l.senders--
	ls.mu.Unlock()
}

// request asks the lane to fetch its channel's history, merged with what
// it was asked already.
func (ls *lanes) request(l *lane, f fetchRequest) {
	ls.mu.Lock()
	if l.fetch == nil {
		l.fetch = &f
	} else {
		l.fetch.merge(f)
	}
	ls.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// fetchWillHand says whether a pending fetch that waits for the queue to
// drain will hand the message with this ID: it is then neither queued
// nor handed from the queue.
func (ls *lanes) fetchWillHand(l *lane, id uint64) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return l.fetch != nil && !l.fetch.first && id > l.fetch.after
}

// due takes the lane's fetch when it is due: at once when it goes first,
// else once the queue is empty, and not before its notBefore. wait > 0
// says when to look again.
func (ls *lanes) due(l *lane) (f *fetchRequest, wait time.Duration) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if l.fetch == nil || (!l.fetch.first && len(l.queue) > 0) {
		return nil, 0
	}
	if wait := time.Until(l.fetch.notBefore); wait > 0 {
		return nil, wait
	}
	f, l.fetch = l.fetch, nil
	return f, 0
}

// work empties the lane until it has nothing to do for laneIdle.
func (ls *lanes) work(l *lane) {
	defer ls.wg.Done()
	defer func() { <-ls.slots }()
	idle := time.NewTimer(ls.r.tune.laneIdle)
	defer idle.Stop()
	var later <-chan time.Time
	for {
		if !ls.waitGate() {
			return
		}
		f, wait := ls.due(l)
		if f != nil {
			ls.r.runFetch(l, *f)
			idle.Reset(ls.r.tune.laneIdle)
			continue
		}
		if wait > 0 {
			later = time.After(wait)
		}
		select {
		case it := <-l.queue:
			ls.r.handleItem(l, it)
			ls.count(-1)
			idle.Reset(ls.r.tune.laneIdle)
		case <-l.wake:
		case <-later:
			later = nil
		case <-idle.C:
			if ls.retire(l) {
				return
			}
			idle.Reset(ls.r.tune.laneIdle)
		case <-ls.r.ctx.Done():
			return
		}
	}
}

// retire ends an idle lane unless something is coming to it.
func (ls *lanes) retire(l *lane) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if l.senders > 0 || len(l.queue) > 0 || l.fetch != nil {
		return false
	}
	delete(ls.byID, l.id)
	return true
}

// hold stops the lanes from handing events on until release(gen) or
// catchupHold, whichever comes first: the catch-up after a READY queues
// what was missed before what arrives live.
func (ls *lanes) hold() int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	select {
	case <-ls.gate:
		ls.gate = make(chan struct{})
	default:
	}
	ls.gateGen++
	gen := ls.gateGen
	time.AfterFunc(ls.r.tune.catchupHold, func() { ls.releaseHold(gen) })
	return gen
}

// releaseHold opens the gate unless a later hold took it.
func (ls *lanes) releaseHold(gen int) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if gen != ls.gateGen {
		return
	}
	select {
	case <-ls.gate:
	default:
		close(ls.gate)
	}
}

// openGate opens the gate whatever hold took it (the gateway stops).
func (ls *lanes) openGate() {
	ls.mu.Lock()
	ls.gateGen++
	gen := ls.gateGen
	ls.mu.Unlock()
	ls.releaseHold(gen)
}

func (ls *lanes) waitGate() bool {
	ls.mu.Lock()
	gate := ls.gate
	ls.mu.Unlock()
	select {
	case <-gate:
		return true
	case <-ls.r.ctx.Done():
		return false
	}
}

// drain waits up to d for the queued events to be handled; fetches of
// history are left to the next start's catch-up.
func (ls *lanes) drain(d time.Duration) {
	ls.openGate()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		ls.mu.Lock()
		pending := ls.pending
		ls.mu.Unlock()
		if pending == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	ls.r.logger.Warn("Discord gateway stopped with events not yet handed on; messages among them are fetched by the catch-up at the next start, if their session is running")
}

func (ls *lanes) wait() { ls.wg.Wait() }
