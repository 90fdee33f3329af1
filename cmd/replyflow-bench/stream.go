package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
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
	return rows, nil
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
