package main

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	anthropicopt "github.com/anthropics/anthropic-sdk-go/option"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/cmd/internal/harness"
	"github.com/replyflow/replyflow/pipeline"
)

// Live replies on Telegram, against fake providers that write their
// answers at a human-visible pace.

// streamingModels are a fake OpenAI and, as its fallback, a fake
// Anthropic, with cfg set to ask them.
func streamingModels(t *testing.T, cfg Config) (Config, *modeltest.Server, *modeltest.Server) {
	oa, an := modeltest.NewOpenAI(), modeltest.NewAnthropic()
	t.Cleanup(oa.Close)
	t.Cleanup(an.Close)
	cfg.Model, cfg.ModelFallbacks = "openai/gpt-test", []string{"anthropic/claude-test"}
	return cfg, oa, an
}

// startStreamingWorker runs s's worker against the fake models, streaming
// in mode, with a preview that appears after 200 ms and is edited every
// 300 ms.
func startStreamingWorker(s *stack, oa, an *modeltest.Server, mode pipeline.StreamMode) {
	s.startWorkerWith(func(acts *activities.Activities) {
		acts.Models = &models.Registry{
			MaxTokens:        256,
			OpenAIOptions:    []openaiopt.RequestOption{openaiopt.WithBaseURL(oa.URL + "/v1"), openaiopt.WithAPIKey("test")},
			AnthropicOptions: []anthropicopt.RequestOption{anthropicopt.WithBaseURL(an.URL), anthropicopt.WithAPIKey("test")},
		}
		acts.Streaming = activities.Streaming{Mode: mode, Pacing: pipeline.PreviewPacing{FirstAfter: 200 * time.Millisecond, Every: 300 * time.Millisecond}, BlockPause: 50 * time.Millisecond}
	})
}

// streamingStack is a Telegram stack whose worker streams in mode.
func streamingStack(t *testing.T, mode pipeline.StreamMode) (*telegramStack, *modeltest.Server, *modeltest.Server) {
	cfg, oa, an := streamingModels(t, testConfig(t))
	s := startTelegramStack(t, cfg)
	startStreamingWorker(s.stack, oa, an, mode)
	return s, oa, an
}

// sentence is n numbered words: each delta of the fake is one.
func sentence(n int) string {
	words := make([]string, n)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	return strings.Join(words, " ")
}

// botMessages are the bot's messages in chat, as they read now.
func botMessages(fake *telegramtest.Server, chat telegramtest.Chat) []telegramtest.Message {
	var out []telegramtest.Message
	for _, m := range fake.Sent(chat.ID) {
		if m.From.ID == fake.Bot.ID {
			out = append(out, m)
		}
	}
	return out
}

func TestAStreamedAnswerIsPreviewedAndEndsAsTheFinalText(t *testing.T) {
	t.Parallel()
	s, oa, _ := streamingStack(t, pipeline.StreamPreview)
	answer := sentence(40)
	oa.Push(modeltest.Step{Text: answer, TokenDelay: 60 * time.Millisecond})
	chat := telegramtest.Private(6201)
	asked := s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "tell me a long story"})

	waitFor(t, s.fake, "a preview", func() bool { return len(botMessages(s.fake, chat)) > 0 })
	first := botMessages(s.fake, chat)[0]
	assert.NotEqual(t, answer, first.Text, "the preview shows the answer before it is complete")
	assert.Equal(t, asked, first.ReplyTo)
	waitFor(t, s.fake, "the final text", func() bool {
		got := botMessages(s.fake, chat)
		return len(got) == 1 && got[0].Text == answer
	})
	waitFor(t, s.fake, "the reaction cleared", cleared(s.fake, chat, asked))
	got := botMessages(s.fake, chat)
	require.Len(t, got, 1, "one message: the preview became the answer")
	assert.GreaterOrEqual(t, got[0].Edits, 3, "edited as the text grew")
	recordHistoryOf(t, s.client, tgKey(chat), "stream_preview")
}

func TestStreamedBlocksAreSentOnceAndTheRestFollows(t *testing.T) {
	t.Parallel()
	s, oa, _ := streamingStack(t, pipeline.StreamBlocks)
	var paras []string
	for p := 0; p < 4; p++ {
		paras = append(paras, strings.Repeat(fmt.Sprintf("para%d ", p), 80)) // 480 characters
	}
	answer := strings.TrimSpace(strings.Join(paras, "\n\n"))
	oa.Push(modeltest.Step{Text: answer, TokenDelay: 2 * time.Millisecond})
	chat := telegramtest.Private(6202)
	asked := s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "four paragraphs please"})

	waitFor(t, s.fake, "the reaction cleared", cleared(s.fake, chat, asked))
	got := botMessages(s.fake, chat)
	require.GreaterOrEqual(t, len(got), 2, "a block, then the rest")
	var texts []string
	for _, m := range got {
		texts = append(texts, m.Text)
		assert.Zero(t, m.Edits)
	}
	assert.Equal(t, strings.Join(strings.Fields(answer), " "), strings.Join(strings.Fields(strings.Join(texts, "\n\n")), " "), "every paragraph once, in order")
	assert.Equal(t, asked, got[0].ReplyTo, "the first block answers the message")
	recordHistoryOf(t, s.client, tgKey(chat), "stream_blocks")
}

func TestAFallbackMidStreamFinishesTheSamePreview(t *testing.T) {
	t.Parallel()
	s, oa, an := streamingStack(t, pipeline.StreamPreview)
	oa.Push(modeltest.Step{Text: sentence(40), TokenDelay: 60 * time.Millisecond, BreakAfter: 15})
	final := "The fallback's whole answer, from the start."
	an.Push(modeltest.Step{Text: final})
	chat := telegramtest.Private(6203)
	asked := s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "go on"})

	waitFor(t, s.fake, "the fallback's answer", func() bool {
		got := botMessages(s.fake, chat)
		return len(got) > 0 && got[len(got)-1].Text == final
	})
	waitFor(t, s.fake, "the reaction cleared", cleared(s.fake, chat, asked))
	got := botMessages(s.fake, chat)
	require.Len(t, got, 1, "the fallback edited the preview the first model began")
	assert.GreaterOrEqual(t, got[0].Edits, 1)
	snap := s.stateOf(tgKey(chat))
	assert.Equal(t, []string{"openai/gpt-test: " + pipeline.ErrTimeout}, snap.LastTurn.Fallback)
	recordHistoryOf(t, s.client, tgKey(chat), "stream_fallback")
}

func TestStopMidStreamKeepsThePreviewAndSaysSo(t *testing.T) {
	t.Parallel()
	s, oa, _ := streamingStack(t, pipeline.StreamPreview)
	oa.Push(modeltest.Step{Text: sentence(200), TokenDelay: 50 * time.Millisecond})
	chat := telegramtest.Private(6204)
	s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "talk for a while"})
	waitFor(t, s.fake, "a preview edited once", func() bool {
		got := botMessages(s.fake, chat)
		return len(got) == 1 && got[0].Edits >= 1
	})
	s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "/stop"})
	waitFor(t, s.fake, "the preview marked stopped", func() bool {
		got := botMessages(s.fake, chat)
		return len(got) >= 1 && strings.HasSuffix(got[0].Text, strings.TrimSpace(pipeline.StoppedMark))
	})
	preview := botMessages(s.fake, chat)[0]
	assert.True(t, strings.HasPrefix(preview.Text, "w0 w1"), "what was written stays: %q", preview.Text)
	assert.NotContains(t, preview.Text, "w199", "the answer did not run to its end")
	waitFor(t, s.fake, "the stop answered", func() bool {
		return s.stateOf(tgKey(chat)).LastTurn != nil && s.stateOf(tgKey(chat)).LastTurn.Outcome == "aborted"
	})
	recordHistoryOf(t, s.client, tgKey(chat), "stream_stopped")
}

// TestAWorkerKilledMidStreamShowsTheAnswerOnce kills the worker process
// (SIGKILL: no goodbye, no last heartbeat) while it streams, in each
// mode, and starts another: the user sees one preview, or each block
// once, and one complete answer.
func TestAWorkerKilledMidStreamShowsTheAnswerOnce(t *testing.T) {
	dir := t.TempDir()
	bin, err := harness.Build(dir)
	require.NoError(t, err)
	for i, mode := range []pipeline.StreamMode{pipeline.StreamPreview, pipeline.StreamBlocks} {
		t.Run(string(mode), func(t *testing.T) {
			fake := telegramtest.New(fmt.Sprintf("500%d:killstream", i))
			t.Cleanup(fake.Close)
			oa := modeltest.NewOpenAI()
			t.Cleanup(oa.Close)
			env := harness.Env(temporalServer.FrontendHostPort(), fmt.Sprintf("killstream-%d", queueSeq.Add(1)), filepath.Join(dir, string(mode)+".db"), fake, map[string]string{
				"MODEL": "openai/gpt-test", "STREAM": string(mode), "STREAM_PREVIEW_AFTER": "200ms",
				"TURN_HEARTBEAT_TIMEOUT": "2s", "DEBOUNCE": "0s", "LOG_LEVEL": "info", "REACTION_CLEAR_DELAY": "1s",
			})
			env = append(env, "OPENAI_BASE_URL="+oa.URL+"/v1", "OPENAI_API_KEY=test")
			chat := telegramtest.Private(int64(6300 + i))
			var answer, rest string
			if mode == pipeline.StreamPreview {
				answer = sentence(200)
				oa.Push(modeltest.Step{Text: answer, TokenDelay: 40 * time.Millisecond})
				rest = "The answer again, whole, from the second worker."
				oa.Push(modeltest.Step{Text: rest})
			} else {
				para := func(p int) string { return strings.TrimSpace(strings.Repeat(fmt.Sprintf("para%d ", p), 150)) } // 900 characters
				answer = para(0) + "\n\n" + para(1) + "\n\n" + para(2)
				oa.Push(modeltest.Step{Text: answer, TokenDelay: 15 * time.Millisecond})
				rest = "\n\n" + para(3)
				oa.Push(modeltest.Step{Text: rest})
			}
			worker := harness.Worker(bin, env, filepath.Join(dir, string(mode)+"-worker1.log"))
			require.NoError(t, worker.Start())
			t.Cleanup(func() { worker.Kill() })
			gw, err := harness.Gateway(bin, env, filepath.Join(dir, string(mode)+"-gateway.log"))
			require.NoError(t, err)
			require.NoError(t, gw.Start())
			t.Cleanup(func() { gw.Kill() })

			asked := fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "a long one"})
			waitFor(t, fake, "the answer on screen", func() bool {
				got := botMessages(fake, chat)
				if mode == pipeline.StreamPreview {
					return len(got) == 1 && got[0].Edits >= 2
				}
				return len(got) >= 1
			})
			// The kill comes once the store recorded what is on screen: a
			// worker killed between a platform's answer and that record
			// (microseconds) would show it again, as a chunk killed
			// between its send and its ledger entry would.
			require.Eventually(t, func() bool { return recordedStreams(t, filepath.Join(dir, string(mode)+".db")) > 0 }, time.Minute, 10*time.Millisecond)
			shownBefore := botMessages(fake, chat)
			worker.Kill()
			worker = harness.Worker(bin, env, filepath.Join(dir, string(mode)+"-worker2.log"))
			require.NoError(t, worker.Start())
			waitFor(t, fake, "the reaction cleared", cleared(fake, chat, asked))

			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("the second worker's log:\n%s", worker.Tail())
				}
			})
			got := botMessages(fake, chat)
			requests := oa.Requests()
			require.Len(t, requests, 2, "the second worker asked again")
			if mode == pipeline.StreamPreview {
				require.Len(t, got, 1, "one preview: the second worker edited it")
				assert.Equal(t, rest, got[0].Text, "the complete answer replaced the preview")
				return
			}
			sent := strings.TrimSpace(shownBefore[0].Text)
			last := requests[1].Messages[len(requests[1].Messages)-1]
			assert.True(t, strings.HasPrefix(last, "assistant: "+sent), "the second worker continued after what was sent: %.60q (of %d messages; first request %d)", last, len(requests[1].Messages), len(requests[0].Messages))
			var texts []string
			for _, m := range got {
				texts = append(texts, m.Text)
			}
			// What the user sees: the blocks sent before the kill, once,
			// then the continuation the second worker asked for.
			var before []string
			for _, m := range shownBefore {
				before = append(before, m.Text)
			}
			whole := strings.Join(strings.Fields(strings.Join(before, "\n\n")+rest), " ")
			assert.Equal(t, whole, strings.Join(strings.Fields(strings.Join(texts, "\n\n")), " "), "each block once, then the rest: nothing twice, nothing lost")
		})
	}
}

// recordedStreams counts the streams a worker's SQLite store recorded.
func recordedStreams(t *testing.T, path string) int {
	db, err := sql.Open("sqlite", path+"?mode=ro")
	require.NoError(t, err)
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM stream_shown`).Scan(&n); err != nil {
		return 0 // not migrated yet
	}
	return n
}
