package session

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

// inThread is a user message in a thread.
func inThread(id, thread string) pipeline.Inbound {
	return pipeline.Inbound{MessageID: id, ThreadID: thread, SenderID: "u", SenderName: "Ann", Text: "text " + id}
}

// batchIn is a batch of msgs in mode, under a cap of 10 that drops the
// oldest.
func batchIn(mode pipeline.QueueMode, msgs ...pipeline.Inbound) Batch {
	return Batch{Messages: msgs, Queue: pipeline.QueueSettings{Mode: mode, Cap: 10, Drop: pipeline.DropOld}}
}

// turnAtModel is a turn asking its model in thread.
func turnAtModel(thread string) RunningTurn {
	return RunningTurn{TurnID: "run.1", AtModel: true, Thread: thread}
}

// queueEmits are the events of type T among effects.
func queueEmits[T Event](effects []Effect) []T {
	var out []T
	for _, e := range effects {
		if emit, ok := e.(Emit); ok {
			if ev, ok := emit.Event.(T); ok {
				out = append(out, ev)
			}
		}
	}
	return out
}

// queueClears are the IDs of the messages whose reactions effects clear.
func queueClears(effects []Effect) []string {
	var ids []string
	for _, w := range queueEmits[ReactionsWanted](effects) {
		if w.State != pipeline.ReactionNone {
			continue
		}
		for _, r := range w.Refs {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

func queuedIDs(s *QueueState) [][]string {
	ids := [][]string{}
	for _, b := range s.Queue {
		var batch []string
		for _, m := range b.Messages {
			batch = append(batch, m.MessageID)
		}
		ids = append(ids, batch)
	}
	return ids
}

// dispatchCase is a batch "new" dispatched in mode behind a queued batch
// "old", while turn runs, and what follows.
type dispatchCase struct {
	name        string
	mode        pipeline.QueueMode
	turn        RunningTurn
	steered     bool // a Steered event for the turn
	backlog     bool
	interrupt   bool
	queued      [][]string
	queuedFlag  bool // the new batch is marked as having waited behind a turn
	steeredN    int
	interruptsN int
}

// turnAtModelWith is a turn asking its model in thread "t", changed.
func turnAtModelWith(change func(*RunningTurn)) RunningTurn {
	turn := turnAtModel("t")
	change(&turn)
	return turn
}

func TestDispatchDecidesByModeAndTheRunningTurn(t *testing.T) {
	interrupted := turnAtModelWith(func(t *RunningTurn) { t.Interrupted = true })
	aborted := turnAtModelWith(func(t *RunningTurn) { t.Aborted = true })
	delivering := turnAtModelWith(func(t *RunningTurn) { t.AtModel = false })
	fullByCount := turnAtModelWith(func(t *RunningTurn) { t.Steered = maxSteered })
	fullByBytes := turnAtModelWith(func(t *RunningTurn) { t.SteeredBytes = maxSteeredBytes - inThread("new", "t").Size() + 1 })
	waits := [][]string{{"old"}, {"new"}}
	tests := []dispatchCase{
		{name: "followup with no turn is queued to run now", mode: pipeline.QueueFollowup, queued: waits},
		{name: "followup behind a turn waits", mode: pipeline.QueueFollowup, turn: turnAtModel("t"), queued: waits, queuedFlag: true},
		{name: "collect behind a turn waits", mode: pipeline.QueueCollect, turn: turnAtModel("t"), queued: waits, queuedFlag: true},
		{name: "steer joins the turn's next step", mode: pipeline.QueueSteer, turn: turnAtModel("t"), steered: true, queued: [][]string{{"old"}}, steeredN: 1},
		{name: "steer with no turn is queued", mode: pipeline.QueueSteer, queued: waits},
		{name: "steer waits for a turn past its model steps", mode: pipeline.QueueSteer, turn: delivering, queued: waits, queuedFlag: true},
		{name: "steer waits for a turn in another thread", mode: pipeline.QueueSteer, turn: turnAtModel("other"), queued: waits, queuedFlag: true},
		{name: "steer waits for an interrupted turn", mode: pipeline.QueueSteer, turn: interrupted, queued: waits, queuedFlag: true},
		{name: "steer waits for a stopped turn", mode: pipeline.QueueSteer, turn: aborted, queued: waits, queuedFlag: true},
		{name: "steer past the steered count waits", mode: pipeline.QueueSteer, turn: fullByCount, queued: waits, queuedFlag: true},
		{name: "steer past the steered bytes waits", mode: pipeline.QueueSteer, turn: fullByBytes, queued: waits, queuedFlag: true},
		{name: "steer-backlog joins the turn and waits too", mode: pipeline.QueueSteerBacklog, turn: turnAtModel("t"), steered: true, backlog: true, queued: waits, queuedFlag: true, steeredN: 1},
		{name: "steer-backlog only waits for a turn in another thread", mode: pipeline.QueueSteerBacklog, turn: turnAtModel("other"), queued: waits, queuedFlag: true},
		{name: "interrupt stops the turn and goes first", mode: pipeline.QueueInterrupt, turn: turnAtModel("t"), interrupt: true, queued: [][]string{{"new"}, {"old"}}, interruptsN: 1},
		{name: "interrupt in another thread stops the turn too", mode: pipeline.QueueInterrupt, turn: turnAtModel("other"), interrupt: true, queued: [][]string{{"new"}, {"old"}}, interruptsN: 1},
		{name: "interrupt waits behind an interrupted turn", mode: pipeline.QueueInterrupt, turn: interrupted, queued: waits, queuedFlag: true},
		{name: "interrupt waits for a turn past its model steps", mode: pipeline.QueueInterrupt, turn: delivering, queued: waits, queuedFlag: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := QueueState{Queue: []Batch{batchIn(pipeline.QueueFollowup, inThread("old", "t"))}}
			out := s.Dispatch(envAt(0), batchIn(tt.mode, inThread("new", "t")), tt.turn)
			assertDispatched(t, tt, &s, out)
		})
	}
}

func assertDispatched(t *testing.T, tt dispatchCase, s *QueueState, out []Effect) {
	t.Helper()
	steered := queueEmits[Steered](out)
	if tt.steered {
		require.Len(t, steered, 1)
		assert.Equal(t, Steered{TurnID: tt.turn.TurnID, Messages: []pipeline.Inbound{inThread("new", "t")}, Backlog: tt.backlog}, steered[0])
	} else {
		assert.Empty(t, steered)
	}
	if tt.interrupt {
		assert.Equal(t, []Interrupt{{TurnID: tt.turn.TurnID}}, queueEmits[Interrupt](out))
	} else {
		assert.Empty(t, queueEmits[Interrupt](out))
	}
	assert.Equal(t, tt.queued, queuedIDs(s))
	for _, b := range s.Queue {
		if b.Messages[0].MessageID == "new" {
			assert.Equal(t, tt.queuedFlag, b.Queued)
		}
	}
	assert.Equal(t, tt.steeredN, s.Steered)
	assert.Equal(t, tt.interruptsN, s.Interrupted)
	assert.Empty(t, queueClears(out), "nothing is dropped under the cap")
}

func TestTheQueueKeepsToItsCapUnderEachDropPolicy(t *testing.T) {
	// big fills a little more than a quarter of the byte bound, so three
	// fit and a fourth does not.
	big := func(id string) pipeline.Inbound {
		m := inThread(id, "t")
		m.Text = strings.Repeat("x", maxQueuedBytes/4)
		return m
	}
	tests := []struct {
		name      string
		policy    pipeline.DropPolicy
		capN      int
		msg       func(id string) pipeline.Inbound
		queued    [][]string
		cleared   []string
		summaries int
	}{
		{name: "by count, old drops the oldest", policy: pipeline.DropOld, capN: 2, msg: func(id string) pipeline.Inbound { return inThread(id, "t") },
			queued: [][]string{{"3"}, {"4"}}, cleared: []string{"1", "2"}},
		{name: "by count, new drops the newest", policy: pipeline.DropNew, capN: 2, msg: func(id string) pipeline.Inbound { return inThread(id, "t") },
			queued: [][]string{{"1"}, {"2"}}, cleared: []string{"3", "4"}},
		{name: "by count, summarize keeps a line of the oldest", policy: pipeline.DropSummarize, capN: 2, msg: func(id string) pipeline.Inbound { return inThread(id, "t") },
			queued: [][]string{{"3"}, {"4"}}, summaries: 2},
		{name: "a cap of zero keeps one", policy: pipeline.DropOld, capN: 0, msg: func(id string) pipeline.Inbound { return inThread(id, "t") },
			queued: [][]string{{"4"}}, cleared: []string{"1", "2", "3"}},
		{name: "by bytes, old drops the oldest", policy: pipeline.DropOld, capN: 10, msg: big,
			queued: [][]string{{"2"}, {"3"}, {"4"}}, cleared: []string{"1"}},
		{name: "by bytes, new drops the newest", policy: pipeline.DropNew, capN: 10, msg: big,
			queued: [][]string{{"1"}, {"2"}, {"3"}}, cleared: []string{"4"}},
		{name: "by bytes, summarize keeps a line of the oldest", policy: pipeline.DropSummarize, capN: 10, msg: big,
			queued: [][]string{{"2"}, {"3"}, {"4"}}, summaries: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s QueueState
			var cleared []string
			for i := 1; i <= 4; i++ {
				b := batchIn(pipeline.QueueFollowup, tt.msg(strconv.Itoa(i)))
				b.Queue.Cap, b.Queue.Drop = tt.capN, tt.policy
				cleared = append(cleared, queueClears(s.Dispatch(envAt(0), b, turnAtModel("t")))...)
			}
			assert.Equal(t, tt.queued, queuedIDs(&s))
			assert.Equal(t, tt.cleared, cleared)
			assert.LessOrEqual(t, queuedBytes(s.Queue), maxQueuedBytes)
			assert.Equal(t, len(tt.cleared)+tt.summaries, s.Dropped)
			if tt.summaries == 0 {
				assert.Nil(t, s.Overflow)
				return
			}
			require.NotNil(t, s.Overflow)
			assert.Len(t, s.Overflow.Summaries, tt.summaries)
			assert.Len(t, s.Overflow.Refs, tt.summaries, "summarized messages keep their reactions for the next turn")
		})
	}
}

func TestALoneBatchPastTheByteBoundIsKept(t *testing.T) {
	var s QueueState
	m := inThread("huge", "t")
	m.Text = strings.Repeat("x", maxQueuedBytes)
	out := s.Dispatch(envAt(0), batchIn(pipeline.QueueFollowup, m), RunningTurn{})
	assert.Empty(t, queueClears(out))
	assert.True(t, s.Queued())
}

func TestAnInterruptTrimsTheBatchesBehindIt(t *testing.T) {
	for _, policy := range []pipeline.DropPolicy{pipeline.DropOld, pipeline.DropNew} {
		t.Run(string(policy), func(t *testing.T) {
			var s QueueState
			for _, id := range []string{"a", "b", "c"} {
				s.Dispatch(envAt(0), batchIn(pipeline.QueueFollowup, inThread(id, "t")), turnAtModel("t"))
			}
			b := batchIn(pipeline.QueueInterrupt, inThread("x", "t"))
			b.Queue.Cap, b.Queue.Drop = 2, policy
			out := s.Dispatch(envAt(0), b, turnAtModel("t"))
			assert.Equal(t, [][]string{{"x"}, {"c"}}, queuedIDs(&s), "the interrupting batch stays; the oldest behind it go")
			assert.Equal(t, []string{"a", "b"}, queueClears(out))
			assert.Len(t, queueEmits[Interrupt](out), 1)
		})
	}
}

func TestSummarizeKeepsAtMostItsLinesAndClearsTheRest(t *testing.T) {
	var s QueueState
	msgs := make([]pipeline.Inbound, maxOverflowLines+10)
	for i := range msgs {
		msgs[i] = inThread("m"+strconv.Itoa(i), "t")
	}
	old := batchIn(pipeline.QueueFollowup, msgs...)
	s.Queue = []Batch{old}
	b := batchIn(pipeline.QueueFollowup, inThread("new", "t"))
	b.Queue.Cap, b.Queue.Drop = 1, pipeline.DropSummarize
	out := s.Dispatch(envAt(0), b, turnAtModel("t"))

	require.NotNil(t, s.Overflow)
	assert.Len(t, s.Overflow.Summaries, maxOverflowLines)
	assert.Equal(t, "Ann: text m0", s.Overflow.Summaries[0])
	assert.Equal(t, maxOverflowLines+10, s.Overflow.Dropped)
	assert.Len(t, queueClears(out), 10, "messages past the lines get no turn: their reactions are cleared")
	assert.Equal(t, "m"+strconv.Itoa(maxOverflowLines), queueClears(out)[0])

	next, ok := s.Next(envAt(time.Second))
	require.True(t, ok)
	assert.True(t, strings.HasPrefix(next.Preface, "[Queue overflow] Dropped 60 message(s) due to cap.\n- Ann: text m0\n"))
	assert.Len(t, next.OverflowRefs, maxOverflowLines)
	assert.Nil(t, s.Overflow, "the overflow goes to one turn only")
}

func TestNextTakesOneTurnsBatches(t *testing.T) {
	collect := func(id, thread string) Batch {
		b := batchIn(pipeline.QueueCollect, inThread(id, thread))
		b.Queued = true
		return b
	}
	tests := []struct {
		name   string
		queue  []Batch
		msgs   []string
		text   string
		queued [][]string
	}{
		{name: "followup takes one batch, oldest first",
			queue: []Batch{batchIn(pipeline.QueueFollowup, inThread("a", "t"), inThread("b", "t")), batchIn(pipeline.QueueFollowup, inThread("c", "t"))},
			msgs:  []string{"a", "b"}, text: "text a\ntext b", queued: [][]string{{"c"}}},
		{name: "collect takes every collect batch of the first one's thread",
			queue: []Batch{collect("a", "t"), collect("b", "other"), batchIn(pipeline.QueueFollowup, inThread("c", "t")), collect("d", "t")},
			msgs:  []string{"a", "d"}, text: pipeline.RenderCollected([]string{"text a", "text d"}), queued: [][]string{{"b"}, {"c"}}},
		{name: "a collect batch that waited for no turn is its plain text",
			queue: []Batch{batchIn(pipeline.QueueCollect, inThread("a", "t"))},
			msgs:  []string{"a"}, text: "text a", queued: [][]string{}},
		{name: "a batch of another mode ahead is taken alone",
			queue: []Batch{batchIn(pipeline.QueueSteer, inThread("a", "t")), collect("b", "t")},
			msgs:  []string{"a"}, text: "text a", queued: [][]string{{"b"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := QueueState{Queue: tt.queue}
			require.True(t, s.Ready(RunningTurn{}))
			next, ok := s.Next(envAt(0))
			require.True(t, ok)
			var ids []string
			for _, m := range next.Messages {
				ids = append(ids, m.MessageID)
			}
			assert.Equal(t, tt.msgs, ids)
			assert.Equal(t, tt.text, next.Text)
			assert.Equal(t, tt.text, next.Prompt(next.Text), "no preface without an overflow or a stop")
			assert.Equal(t, tt.queued, queuedIDs(&s))
		})
	}
}

func TestNextMergesDirectivesAndTakesTheNewTranscriptOnce(t *testing.T) {
	think, verbose, model := pipeline.ThinkHigh, true, "demo/b"
	first, second := batchIn(pipeline.QueueCollect, inThread("a", "t")), batchIn(pipeline.QueueCollect, inThread("b", "t"))
	first.Directives = &pipeline.Directives{Think: &think, Model: new("demo/a")}
	second.Directives = &pipeline.Directives{Verbose: &verbose, Model: &model}
	second.NoAnchor = true
	s := QueueState{Queue: []Batch{first, second, batchIn(pipeline.QueueFollowup, inThread("c", "t"))}}
	s.AskNewTranscript()

	next, ok := s.Next(envAt(0))
	require.True(t, ok)
	assert.Equal(t, &pipeline.Directives{Think: &think, Verbose: &verbose, Model: &model}, next.Directives, "a later message's directives win")
	assert.False(t, next.NoAnchor, "the first batch anchors the reply")
	assert.True(t, next.NewTranscript)

	next, ok = s.Next(envAt(0))
	require.True(t, ok)
	assert.Nil(t, next.Directives)
	assert.False(t, next.NewTranscript, "a fresh transcript is asked of one turn")
	_, ok = s.Next(envAt(0))
	assert.False(t, ok)
}

func TestAbortDropsEverythingWaitingAndTellsTheNextTurn(t *testing.T) {
	tests := []struct {
		name        string
		queue       []Batch
		overflow    *Overflow
		turnStopped bool
		unsent      []pipeline.Inbound
		cleared     []string
		dropped     int
		marked      bool
	}{
		{name: "nothing waits and no turn runs", cleared: nil},
		{name: "a running turn alone", turnStopped: true, marked: true},
		{name: "open windows alone", unsent: []pipeline.Inbound{inThread("w", "t")}, cleared: []string{"w"}, dropped: 1, marked: true},
		{
			name:        "everything",
			queue:       []Batch{batchIn(pipeline.QueueFollowup, inThread("q1", "t")), batchIn(pipeline.QueueFollowup, inThread("q2", "t"))},
			overflow:    &Overflow{Dropped: 1, Summaries: []string{"Ann: text o"}, Refs: refsOf(inThread("o", "t"))},
			turnStopped: true,
			unsent:      []pipeline.Inbound{inThread("steered", "t"), inThread("w", "t")},
			cleared:     []string{"steered", "w", "q1", "q2", "o"},
			dropped:     4,
			marked:      true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := QueueState{Queue: tt.queue, Overflow: tt.overflow}
			out := s.Abort(envAt(0), tt.turnStopped, tt.unsent)
			assert.Equal(t, tt.cleared, queueClears(out))
			assert.False(t, s.Queued())
			assert.Nil(t, s.Overflow)
			assert.Equal(t, tt.dropped, s.Dropped)
			assert.Equal(t, tt.marked, s.AbortedLastRun)
			assert.Equal(t, map[bool]int{true: 1}[tt.marked], s.Aborted)
		})
	}
}

func TestTheTurnAfterAnAbortIsToldOfIt(t *testing.T) {
	var s QueueState
	s.Abort(envAt(0), true, nil)
	s.Dispatch(envAt(time.Second), batchIn(pipeline.QueueFollowup, inThread("a", "t")), RunningTurn{})
	next, ok := s.Next(envAt(time.Second))
	require.True(t, ok)
	assert.Equal(t, pipeline.AbortedNotice+"\n\ndressed", next.Prompt("dressed"))
	assert.False(t, s.AbortedLastRun, "only the next turn is told")
}

func TestRequeueQueuesUntakenSteeredMessagesAsAFollowup(t *testing.T) {
	var s QueueState
	assert.Empty(t, s.Requeue(envAt(0), nil, debounce(time.Second)))
	assert.False(t, s.Queued())

	settings := pipeline.QueueSettings{Mode: pipeline.QueueSteer, Cap: 1, Drop: pipeline.DropNew}
	s.Queue = []Batch{batchIn(pipeline.QueueFollowup, inThread("waiting", "t"))}
	out := s.Requeue(envAt(0), []pipeline.Inbound{inThread("s1", "t"), inThread("s2", "t")}, settings)
	assert.Equal(t, []string{"s1", "s2"}, queueClears(out), "the queue's cap and policy apply to them")

	settings.Cap = 5
	s.Requeue(envAt(0), []pipeline.Inbound{inThread("s1", "t")}, settings)
	require.Len(t, s.Queue, 2)
	assert.Equal(t, pipeline.QueueFollowup, s.Queue[1].Queue.Mode)
	assert.True(t, s.Queue[1].Queued)
}

func TestReadyOnlyWhenNoTurnRuns(t *testing.T) {
	var s QueueState
	assert.False(t, s.Ready(RunningTurn{}))
	out := s.Dispatch(envAt(0), batchIn(pipeline.QueueFollowup, inThread("a", "t")), turnAtModel("t"))
	assert.Contains(t, out, Effect(Publish{}), "the queue's depth is a search attribute")
	assert.True(t, s.Queued())
	assert.False(t, s.Ready(turnAtModel("t")))
	assert.True(t, s.Ready(RunningTurn{}))
}
