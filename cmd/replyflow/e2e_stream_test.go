package main

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"os"
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
	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
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
	chat := telegramtest.Private(uniqueTelegramID())
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
	chat := telegramtest.Private(uniqueTelegramID())
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
	chat := telegramtest.Private(uniqueTelegramID())
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
	chat := telegramtest.Private(uniqueTelegramID())
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
// (SIGKILL: no goodbye, no last heartbeat) while it streams, on each
// platform in each mode, and starts another: the user sees one preview,
// or each block once, and one complete answer.
func TestAWorkerKilledMidStreamShowsTheAnswerOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin, err := harness.Build(dir)
	require.NoError(t, err)
	for _, platform := range []string{"telegram", "slack", "discord"} {
		for _, mode := range []pipeline.StreamMode{pipeline.StreamPreview, pipeline.StreamBlocks} {
			t.Run(platform+"/"+string(mode), func(t *testing.T) {
				killMidStream(t, bin, filepath.Join(dir, platform+"-"+string(mode)), newKillChat(t, platform), mode)
			})
		}
	}
}

// killChat is one platform's fake as the kill test uses it: a chat to
// ask in, and the bot's messages there as they read now.
type killChat struct {
	env     map[string]string
	up      func() bool
	ask     func(text string)
	bot     func() []shownMessage
	waitFor func(ctx context.Context, cond func() bool) error
}

type shownMessage struct {
	Text  string
	Edits int
}

// slackShown and discordShown read the bot's messages in a channel.
func slackShown(fake *slacktest.Server, channel string) func() []shownMessage {
	return func() (out []shownMessage) {
		for _, m := range fake.Sent(channel) {
			out = append(out, shownMessage{m.Text, m.Edits})
		}
		return out
	}
}

func discordShown(fake *discordtest.Server, channel string) func() []shownMessage {
	return func() (out []shownMessage) {
		for _, m := range fake.Sent(channel) {
			out = append(out, shownMessage{m.Content, m.Edits})
		}
		return out
	}
}

func newKillChat(t *testing.T, platform string) killChat {
	const user = "830000000000000001"
	switch platform {
	case "slack":
		fake := slacktest.New(slacktest.Options{})
		t.Cleanup(fake.Close)
		channel := uniqueSlackChannel("DKILL")
		fake.AddChannel(slacktest.Channel{ID: channel, Members: 2})
		return killChat{
			env: harness.SlackVars(fake),
			up:  func() bool { return fake.Connections() > 0 },
			ask: func(text string) {
				_, events := fake.AddMessage(slacktest.Post{Channel: channel, User: "U0KILL", Text: text})
				for _, ev := range events {
					fake.SendEvent(ev)
				}
			},
			bot:     slackShown(fake, channel),
			waitFor: fake.WaitFor,
		}
	case "discord":
		fake := discordtest.New(discordtest.Options{})
		t.Cleanup(fake.Close)
		channel := newSnowflake()
		fake.AddChannel(discordtest.Channel{ID: channel, Type: discordtest.DM, Recipient: user})
		return killChat{
			env:     harness.DiscordVars(fake),
			up:      func() bool { return fake.Connections() > 0 },
			ask:     func(text string) { fake.Post(discordtest.Post{Channel: channel, Author: user, Content: text}) },
			bot:     discordShown(fake, channel),
			waitFor: fake.WaitFor,
		}
	}
	// A bot and a chat of its own: sessions outlive a subtest on the
	// shared server, and one of the same key would be the last one's.
	fake := telegramtest.New(fmt.Sprintf("%d:killstream", uniqueTelegramID()))
	t.Cleanup(fake.Close)
	chat := telegramtest.Private(uniqueTelegramID())
	return killChat{
		env: harness.TelegramVars(fake),
		up:  func() bool { return true },
		ask: func(text string) { fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: text}) },
		bot: func() (out []shownMessage) {
			for _, m := range botMessages(fake, chat) {
				out = append(out, shownMessage{m.Text, m.Edits})
			}
			return out
		},
		waitFor: fake.WaitFor,
	}
}

func killMidStream(t *testing.T, bin, dir string, chat killChat, mode pipeline.StreamMode) {
	require.NoError(t, os.MkdirAll(dir, 0o755))
	oa := modeltest.NewOpenAI()
	t.Cleanup(oa.Close)
	vars := map[string]string{
		"MODEL": "openai/gpt-test", "STREAM": string(mode), "STREAM_PREVIEW_AFTER": "200ms",
		"TURN_HEARTBEAT_TIMEOUT": "2s", "DEBOUNCE": "0s", "LOG_LEVEL": "info", "REACTION_CLEAR_DELAY": "1s",
	}
	maps.Copy(vars, chat.env)
	store := filepath.Join(dir, "store.db")
	env := harness.Env(temporalServer.FrontendHostPort(), fmt.Sprintf("killstream-%d", queueSeq.Add(1)), store, nil, vars)
	env = append(env, "OPENAI_BASE_URL="+oa.URL+"/v1", "OPENAI_API_KEY=test")
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
	startWorker := realProcesses(t, bin, dir, env)
	worker := startWorker(1)
	waitOn := func(what string, cond func() bool) {
		t.Helper()
		waitOnFake(t, chat.waitFor, what, cond)
	}
	waitOn("the gateway connected", chat.up)

	chat.ask("a long one")
	waitOn("the answer on screen", func() bool {
		got := chat.bot()
		if mode == pipeline.StreamPreview {
			return len(got) == 1 && got[0].Edits >= 2
		}
		return len(got) >= 1
	})
	// The kill comes once the store recorded what is on screen: a worker
	// killed between a platform's answer and that record (microseconds)
	// would show it again, as a chunk killed between its send and its
	// ledger entry would.
	require.Eventually(t, func() bool { return recordedStreams(t, store) > 0 }, time.Minute, 10*time.Millisecond)
	shownBefore := chat.bot()
	worker.Kill()
	startWorker(2)
	final := strings.TrimSpace(rest)
	waitOn("the complete answer", func() bool {
		got := chat.bot()
		return len(got) > 0 && got[len(got)-1].Text == final
	})

	got := chat.bot()
	requests := oa.Requests()
	require.Len(t, requests, 2, "the second worker asked again")
	if mode == pipeline.StreamPreview {
		require.Len(t, got, 1, "one preview: the second worker edited it")
		return
	}
	sent := strings.TrimSpace(shownBefore[0].Text)
	last := requests[1].Messages[len(requests[1].Messages)-1]
	assert.True(t, strings.HasPrefix(last, "assistant: "+sent), "the second worker continued after what was sent: %.60q", last)
	// What the user sees: the blocks sent before the kill, once, then the
	// continuation the second worker asked for.
	var before, texts []string
	for _, m := range shownBefore {
		before = append(before, m.Text)
	}
	for _, m := range got {
		texts = append(texts, m.Text)
	}
	whole := strings.Join(strings.Fields(strings.Join(before, "\n\n")+rest), " ")
	assert.Equal(t, whole, strings.Join(strings.Fields(strings.Join(texts, "\n\n")), " "), "each block once, then the rest: nothing twice, nothing lost")
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
