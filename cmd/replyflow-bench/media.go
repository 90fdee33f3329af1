package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"

	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/adapters/telegram"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/cmd/internal/harness"
	"github.com/replyflow/replyflow/pipeline"
)

// The media stage: mediaChats chats each send a photo of mediaImageBytes
// at once (REPLYFLOW_MEDIA on, a model that takes images), beside the
// same chats sending a caption alone, in one run.
const (
	mediaChats      = 20
	mediaImageBytes = 5 << 20
)

// onePixelPNG is a PNG's first bytes: the image is sniffed as a PNG, and
// the rest of its bytes stand for the picture.
const onePixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="

type mediaRound struct {
	answers      []time.Duration // accepted by the fake platform → the answer, sorted
	peakRSS      int64           // the worker's, sampled every 50 ms
	historyBytes []int           // per session, its whole history
}

// benchMedia measures what images cost a turn: the worker's memory peak,
// message → answer, and history bytes per session, for mediaChats
// concurrent photos of 5 MB against the same chats with text.
func benchMedia(ctx context.Context, c client.Client, o options) ([][]string, error) {
	botID := time.Now().UnixNano() % 1_000_000_000
	fake := telegramtest.New(strconv.FormatInt(botID, 10) + ":media")
	defer fake.Close()
	model := modeltest.NewOpenAI()
	defer model.Close()
	vars := map[string]string{
		"MODEL": "openai/gpt-4o", "STREAM": "off", "DEBOUNCE": "0", "MEDIA": "true",
		"MEDIA_MAX_BYTES": strconv.Itoa(mediaImageBytes + 1<<20), "MEDIA_CHAT_BYTES": strconv.Itoa(4 * mediaImageBytes),
		"CODEC_KEYS": o.codecKeys, "WORKER_VERSIONING": "false",
	}
	env := harness.Env(o.address, "bench-media-"+strconv.FormatInt(botID, 10), filepath.Join(o.workDir, "media.db"), fake, vars)
	env = append(env, "OPENAI_BASE_URL="+model.URL+"/v1", "OPENAI_API_KEY=bench")
	worker := harness.Worker(o.replyflow, env, filepath.Join(o.workDir, "worker-media.log"))
	gateway, err := harness.Gateway(o.replyflow, env, filepath.Join(o.workDir, "gateway-media.log"))
	if err != nil {
		return nil, err
	}
	if err := worker.Start(); err != nil {
		return nil, err
	}
	defer worker.Stop()
	if err := gateway.Start(); err != nil {
		return nil, err
	}
	defer gateway.Stop()
	withLog := func(err error) error {
		return fmt.Errorf("%w\nworker log:\n%s\ngateway log:\n%s", err, worker.Tail(), gateway.Tail())
	}

	head, err := base64.StdEncoding.DecodeString(onePixelPNG)
	if err != nil {
		return nil, err
	}
	image := append(head, bytes.Repeat([]byte{0x5a}, mediaImageBytes-len(head))...)
	fake.AddFile("bench-photo", image)
	next := int64(4_000_000)
	round := func(photo bool) (mediaRound, error) {
		var res mediaRound
		var mu sync.Mutex
		sampling, stopSampling := context.WithCancel(ctx)
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			for sampling.Err() == nil {
				if rss, err := worker.RSS(); err == nil {
					mu.Lock()
					res.peakRSS = max(res.peakRSS, rss)
					mu.Unlock()
				}
				select {
				case <-sampling.Done():
				case <-time.After(50 * time.Millisecond):
				}
			}
		}()
		type sent struct {
			chat telegramtest.Chat
			msg  int
			at   time.Time
		}
		var msgs []sent
		for range mediaChats {
			next++
			chat := telegramtest.Private(next)
			in := telegramtest.Incoming{Chat: chat, From: telegramtest.User{ID: chat.ID, FirstName: "Bench"}, Caption: "what is this?"}
			if photo {
				in.Photo = "bench-photo"
			} else {
				in.Text, in.Caption = "what is this?", ""
			}
			msgs = append(msgs, sent{chat, fake.AddMessage(in), time.Now()})
		}
		waitCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		for _, m := range msgs {
			if err := fake.WaitFor(waitCtx, func() bool { return fake.Replies(m.chat.ID, m.msg) > 0 }); err != nil {
				stopSampling()
				return res, fmt.Errorf("no answer in chat %d: %w", m.chat.ID, err)
			}
		}
		stopSampling()
		<-sampled
		for _, m := range msgs {
			id := strconv.FormatInt(m.chat.ID, 10)
			for _, call := range fake.Calls("sendMessage") {
				if call.Params["chat_id"] == id && call.Status == 200 {
					res.answers = append(res.answers, call.At.Sub(m.at))
					break
				}
			}
			key := pipeline.SessionKey{Channel: telegram.Channel, Account: strconv.FormatInt(fake.Bot.ID, 10), Chat: id}
			events, err := settledHistory(ctx, c, key.WorkflowID())
			if err != nil {
				return res, err
			}
			size := 0
			for _, ev := range events {
				size += proto.Size(ev)
			}
			res.historyBytes = append(res.historyBytes, size)
		}
		slices.Sort(res.answers)
		slices.Sort(res.historyBytes)
		return res, nil
	}
	if _, err := round(false); err != nil { // warm up the processes
		return nil, withLog(err)
	}
	text, err := round(false)
	if err != nil {
		return nil, withLog(err)
	}
	photos, err := round(true)
	if err != nil {
		return nil, withLog(err)
	}
	if n := len(model.Requests()); n < 3*mediaChats {
		return nil, withLog(fmt.Errorf("the model was asked %d times for %d turns", n, 3*mediaChats))
	}
	medianBytes := func(r mediaRound) int { return r.historyBytes[len(r.historyBytes)/2] }
	return [][]string{
		{fmt.Sprintf("%d concurrent photos of %d MB: message → answer", mediaChats, mediaImageBytes>>20),
			fmt.Sprintf("p50 %s, max %s (text: p50 %s, max %s)", ms(pct(photos.answers, 50)), ms(pct(photos.answers, 100)), ms(pct(text.answers, 50)), ms(pct(text.answers, 100))), ""},
		{"  … worker memory peak", fmt.Sprintf("%s (text: %s, %.2f×)", mb(photos.peakRSS), mb(text.peakRSS), float64(photos.peakRSS)/float64(text.peakRSS)), ""},
		{"  … history bytes per session (median)", fmt.Sprintf("%d (text: %d, %.2f×)", medianBytes(photos), medianBytes(text), float64(medianBytes(photos))/float64(medianBytes(text))),
			"no growth with the file"},
	}, nil
}
