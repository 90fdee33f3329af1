package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/pipeline"
)

// A streaming model's answer in the live-reply measure: streamWords
// words in eight paragraphs, one word every streamPace, as a model
// writing at about 60 tokens a second.
const (
	streamWords = 320
	streamPace  = 15 * time.Millisecond
	streamTurns = 5
)

// streamedAnswer is the scripted answer: eight paragraphs of about 240
// characters (1,900 in all), so blocks mode has blocks to send.
func streamedAnswer() string {
	var paras []string
	for p := 0; p < 8; p++ {
		words := make([]string, streamWords/8)
		for i := range words {
			words[i] = fmt.Sprintf("word%d", p)
		}
		paras = append(paras, strings.Join(words, " "))
	}
	return strings.Join(paras, "\n\n")
}

// benchStreaming measures, for each stream mode, accepted → first visible
// text and accepted → complete reply of a model that streams its answer
// (the fake OpenAI, paced): the first is what live replies change.
func benchStreaming(ctx context.Context, c client.Client, o options) ([][]string, error) {
	var rows [][]string
	for _, mode := range []pipeline.StreamMode{pipeline.StreamOff, pipeline.StreamPreview, pipeline.StreamBlocks} {
		// The reply's delivery clears the reaction (delay 0): the clear
		// marks the moment the whole answer is out, in every mode.
		r, stop, err := startCostRig(ctx, c, o, "stream-"+string(mode), o.replyflow, map[string]string{
			"MODEL": toolModel, "STREAM": string(mode), "REACTION_CLEAR_DELAY": "0s",
		})
		if err != nil {
			return nil, err
		}
		first, complete, err := r.streamedTurns(ctx)
		stop()
		if err != nil {
			return nil, err
		}
		rows = append(rows, []string{
			fmt.Sprintf("streaming model (%d words, one per %s), STREAM=%s", streamWords, streamPace, mode),
			fmt.Sprintf("first visible text p50 %s (max %s); complete reply p50 %s", ms(pct(first, 50)), ms(pct(first, 100)), ms(pct(complete, 50))),
			"",
		})
	}
	crowd, err := benchStreamingCrowd(ctx, c, o)
	if err != nil {
		return nil, err
	}
	return append(rows, crowd...), nil
}

// streamedTurns runs streamTurns turns in one chat, one at a time, and
// returns each one's accepted → first bot message in reply, and accepted
// → reaction cleared (the last chunk delivered), sorted.
func (r *costRig) streamedTurns(ctx context.Context) (first, complete []time.Duration, err error) {
	r.next++
	chat := telegramtest.Private(r.next)
	for k := 0; k < streamTurns; k++ {
		r.model.Push(modeltest.Step{Text: streamedAnswer(), TokenDelay: streamPace})
		msg := r.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: telegramtest.User{ID: chat.ID, FirstName: "Bench"}, Text: fmt.Sprintf("tell me more, %d", k)})
		waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		err := r.fake.WaitFor(waitCtx, func() bool { return r.fake.Replies(chat.ID, msg) > 0 })
		shown := time.Now()
		if err == nil {
			err = r.fake.WaitFor(waitCtx, func() bool {
				h := r.fake.Reactions(chat.ID, msg)
				return len(h) > 0 && len(h[len(h)-1].Emoji) == 0
			})
		}
		done := time.Now()
		cancel()
		if err != nil {
			return nil, nil, r.withLog(fmt.Errorf("streamed turn %d: %w", k, err))
		}
		accepted, ok := r.sink.acceptedAt(chat.ID, msg)
		if !ok {
			return nil, nil, fmt.Errorf("streamed turn %d: the gateway never accepted message %d", k, msg)
		}
		first, complete = append(first, shown.Sub(accepted)), append(complete, done.Sub(accepted))
	}
	slices.Sort(first)
	slices.Sort(complete)
	return first, complete, nil
}

// Many chats streaming at once on one bot, against a fake that enforces
// the platform's published limits (telegramtest, slacktest, discordtest
// PublishedLimits), with the worker's delivery budget at its defaults.
const (
	crowdChats = 20
	crowdTurns = 3
)

// crowdRun is what one run of crowdChats streaming chats measured.
type crowdRun struct {
	complete []time.Duration // each reply's latency (see crowdRunOn), sorted
	edits    int             // edits the platform answered with success
	answers  int
	tooMany  int // 429s the fake answered
	// tooManyBy names what was answered 429 ("" for nothing, or not
	// known).
	tooManyBy string
	// lost are the answers not delivered within a minute (the run goes
	// on with the chat's next message).
	lost int
}

// benchStreamingCrowd runs crowdChats chats at once, crowdTurns answers
// each, without streaming and then with previews, on each platform, and
// compares the reply's latency, the 429s and the edits per answer.
func benchStreamingCrowd(ctx context.Context, c client.Client, o options) ([][]string, error) {
	var rows [][]string
	for _, platform := range o.crowd {
		var off crowdRun
		for _, mode := range []pipeline.StreamMode{pipeline.StreamOff, pipeline.StreamPreview} {
			run, err := crowdRunOn(ctx, c, o, platform, mode)
			if err != nil {
				return nil, err
			}
			label := fmt.Sprintf("%d chats streaming at once, one %s bot, published limits enforced, STREAM=%s", crowdChats, platform, mode)
			figures := fmt.Sprintf("reply p50 %s p99 %s; 429s %d; edits/answer %.1f",
				ms(pct(run.complete, 50)), ms(pct(run.complete, 99)), run.tooMany, float64(run.edits)/float64(run.answers))
			if run.lost > 0 {
				figures += fmt.Sprintf("; %d of %d not delivered within a minute", run.lost, run.answers)
			}
			if run.tooManyBy != "" {
				figures += " (429s: " + run.tooManyBy + ")"
			}
			note := "0 429s"
			if mode == pipeline.StreamOff {
				off = run
			} else {
				note = fmt.Sprintf("0 429s; p50 %+.0f ms, p99 %+.0f ms against STREAM=off", msf(pct(run.complete, 50)-pct(off.complete, 50)), msf(pct(run.complete, 99)-pct(off.complete, 99)))
			}
			rows = append(rows, []string{label, figures, note})
		}
	}
	return rows, nil
}

// crowdRunOn is one crowd run: Telegram's with the in-process gateway
// timing acceptance (accepted → the reply's reaction cleared), Slack's
// and Discord's with gateway processes (the event sent → the whole
// answer on screen).
func crowdRunOn(ctx context.Context, c client.Client, o options, platform string, mode pipeline.StreamMode) (crowdRun, error) {
	if platform != "telegram" {
		return crowdOn(ctx, c, o, platform, mode)
	}
	r, stop, err := startCostRig(ctx, c, o, "crowd-"+string(mode), o.replyflow, map[string]string{
		"MODEL": toolModel, "STREAM": string(mode), "REACTION_CLEAR_DELAY": "0s",
		"TELEGRAM_PACE": "1s", "TELEGRAM_GROUP_PER_MINUTE": "20", "TELEGRAM_BOT_PER_SECOND": "30",
	})
	if err != nil {
		return crowdRun{}, err
	}
	defer stop()
	r.fake.EnforceLimits(telegramtest.PublishedLimits)
	run, err := r.crowd(ctx)
	if err == nil && len(run.complete) == 0 {
		err = r.withLog(fmt.Errorf("telegram, STREAM=%s: no answer was delivered within a minute", mode))
	}
	return run, err
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// crowd runs crowdChats chats at once, each crowdTurns streamed answers
// in a row, and measures each reply from accepted to delivered.
func (r *costRig) crowd(ctx context.Context) (crowdRun, error) {
	r.model.Push(slices.Repeat([]modeltest.Step{{Text: streamedAnswer(), TokenDelay: streamPace}}, crowdChats*crowdTurns)...)
	chats := make([]telegramtest.Chat, crowdChats)
	for i := range chats {
		r.next++
		chats[i] = telegramtest.Private(r.next)
	}
	editsBefore := len(r.fake.Calls("editMessageText"))
	var (
		mu       sync.Mutex
		complete []time.Duration
		lost     int
	)
	errs := make(chan error, crowdChats)
	var wg sync.WaitGroup
	for _, chat := range chats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range crowdTurns {
				msg := r.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: telegramtest.User{ID: chat.ID, FirstName: "Bench"}, Text: fmt.Sprintf("tell me more, %d", k)})
				if err := r.awaitCleared(ctx, chat, msg); err != nil {
					mu.Lock()
					lost++
					mu.Unlock()
					continue
				}
				done := time.Now()
				accepted, ok := r.sink.acceptedAt(chat.ID, msg)
				if !ok {
					errs <- fmt.Errorf("chat %d, turn %d: the gateway never accepted message %d", chat.ID, k, msg)
					return
				}
				mu.Lock()
				complete = append(complete, done.Sub(accepted))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return crowdRun{}, err
	}
	run := crowdRun{complete: complete, answers: crowdChats * crowdTurns, tooMany: r.fake.TooManyRequestsAnswered(), lost: lost}
	limited := where(r.fake.Calls(), func(c telegramtest.Call) bool { return c.Status == http.StatusTooManyRequests })
	run.tooManyBy = countBy(names(limited, func(c telegramtest.Call) string { return c.Method }))
	run.edits = len(where(r.fake.Calls("editMessageText")[editsBefore:], func(c telegramtest.Call) bool { return c.Status == http.StatusOK }))
	slices.Sort(run.complete)
	return run, nil
}
