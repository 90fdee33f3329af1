package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/adapters/slack"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// The streamed preview on the other platforms' fakes: one message,
// edited as the answer grows, ending as the final text.

func TestAStreamedAnswerIsPreviewedInTheWebChat(t *testing.T) {
	t.Parallel()
	cfg, oa, an := streamingModels(t, testConfig(t))
	s := startStack(t, cfg)
	startStreamingWorker(s, oa, an, pipeline.StreamPreview)
	answer := sentence(40)
	oa.Push(modeltest.Step{Text: answer, TokenDelay: 60 * time.Millisecond})
	chat := uniqueChat("stream-web")
	events := subscribe(t, s.baseURL, chat)
	code, _ := s.post(chat, `{"message_id":"s1","sender_id":"alice","text":"a long one"}`)
	require.Equal(t, http.StatusAccepted, code)

	seen := events.collectUntil(t, time.Minute, isClearOf("s1"))
	var messages, edits []sseEvent
	for _, e := range seen {
		switch e.Type {
		case "message":
			messages = append(messages, e)
		case "edit":
			edits = append(edits, e)
		}
	}
	require.Len(t, messages, 1, "one message: the preview")
	assert.Equal(t, "s1", messages[0].ReplyTo)
	assert.NotEqual(t, answer, messages[0].Text, "it showed the answer before it was complete")
	require.GreaterOrEqual(t, len(edits), 3, "edited as it grew")
	for _, e := range edits {
		assert.Equal(t, messages[0].MessageID, e.MessageID)
	}
	assert.Equal(t, answer, edits[len(edits)-1].Text, "it ends as the final text")
}

func TestAStreamedAnswerIsPreviewedOnSlack(t *testing.T) {
	t.Parallel()
	cfg, oa, an := streamingModels(t, testConfig(t))
	s, fake := startSlackStack(t, cfg)
	startStreamingWorker(s, oa, an, pipeline.StreamPreview)
	answer := sentence(40)
	oa.Push(modeltest.Step{Text: answer, TokenDelay: 60 * time.Millisecond})
	channel := uniqueSlackChannel("C")
	fake.AddChannel(slacktest.Channel{ID: channel, Members: 5})
	post, evs := fake.AddMessage(slacktest.Post{Channel: channel, User: "U0ALICE", Text: "<@" + fake.BotUserID + "> a long one"})
	for _, ev := range evs {
		fake.SendEvent(ev)
	}
	bot := func() []slacktest.Message {
		var out []slacktest.Message
		for _, m := range fake.Thread(channel, post.TS) {
			if m.User == fake.BotUserID {
				out = append(out, m)
			}
		}
		return out
	}
	waitForSlack(t, fake, "a preview in the thread", func() bool { return len(bot()) > 0 })
	assert.NotEqual(t, answer, bot()[0].Text)
	waitForSlack(t, fake, "the final text", func() bool {
		got := bot()
		return len(got) == 1 && got[0].Text == answer
	})
	got := bot()
	require.Len(t, got, 1, "one message: the preview became the answer")
	assert.GreaterOrEqual(t, got[0].Edits, 3, "edited as it grew (chat.update)")
}

func TestAStreamedAnswerIsPreviewedOnDiscord(t *testing.T) {
	t.Parallel()
	cfg, oa, an := streamingModels(t, testConfig(t))
	s := startDiscordStack(t, cfg)
	startStreamingWorker(s.stack, oa, an, pipeline.StreamPreview)
	answer := sentence(40)
	oa.Push(modeltest.Step{Text: answer, TokenDelay: 60 * time.Millisecond})
	channel := s.newChannel()
	post := s.mention(channel, discordAlice, "a long one")

	waitForDiscord(t, s.fake, "a preview", func() bool { return len(s.fake.Sent(channel)) > 0 })
	assert.NotEqual(t, answer, s.fake.Sent(channel)[0].Content)
	s.waitCleared(channel, post.ID)
	got := s.fake.Sent(channel)
	require.Len(t, got, 1, "one message: the preview became the answer")
	assert.Equal(t, answer, got[0].Content)
	assert.GreaterOrEqual(t, got[0].Edits, 3, "edited as it grew")
	assertQuietReplyTo(t, post, got[0])
}

// liveChat is a chat on one platform's fake, in-process, for the
// streaming paths every platform must take alike.
type liveChat struct {
	ask     func(text string)
	bot     func() []shownMessage
	waitFor func(what string, cond func() bool)
	state   func() workflows.Snapshot
}

func newLiveChat(t *testing.T, platform string, mode pipeline.StreamMode) (liveChat, *modeltest.Server, *modeltest.Server) {
	cfg, oa, an := streamingModels(t, testConfig(t))
	switch platform {
	case "slack":
		s, fake := startSlackStack(t, cfg)
		startStreamingWorker(s, oa, an, mode)
		channel := uniqueSlackChannel("D")
		fake.AddChannel(slacktest.Channel{ID: channel, Members: 2})
		return liveChat{
			ask: func(text string) {
				_, evs := fake.AddMessage(slacktest.Post{Channel: channel, User: "U0ALICE", Text: text})
				for _, ev := range evs {
					fake.SendEvent(ev)
				}
			},
			bot:     slackShown(fake, channel),
			waitFor: func(what string, cond func() bool) { waitForSlack(t, fake, what, cond) },
			state: func() workflows.Snapshot {
				return s.stateOf(pipeline.SessionKey{Channel: slack.Channel, Account: fake.TeamID, Chat: channel})
			},
		}, oa, an
	case "discord":
		s := startDiscordStack(t, cfg)
		startStreamingWorker(s.stack, oa, an, mode)
		channel := s.newChannel()
		return liveChat{
			ask:     func(text string) { s.mention(channel, discordAlice, text) },
			bot:     discordShown(s.fake, channel),
			waitFor: func(what string, cond func() bool) { waitForDiscord(t, s.fake, what, cond) },
			state:   func() workflows.Snapshot { return s.stateOf(s.key(channel)) },
		}, oa, an
	}
	s := startStack(t, cfg)
	startStreamingWorker(s, oa, an, mode)
	chat := uniqueChat("live")
	events := subscribe(t, s.baseURL, chat)
	var mu sync.Mutex
	var shown []shownMessage
	byID := map[string]int{}
	changed := make(chan struct{}, 1)
	go func() {
		for e := range events.ch {
			mu.Lock()
			switch e.Type {
			case "message":
				byID[e.MessageID] = len(shown)
				shown = append(shown, shownMessage{Text: e.Text})
			case "edit":
				if i, ok := byID[e.MessageID]; ok {
					shown[i].Text = e.Text
					shown[i].Edits++
				}
			}
			mu.Unlock()
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	}()
	var asked int
	return liveChat{
		ask: func(text string) {
			asked++
			body, _ := json.Marshal(map[string]string{"message_id": fmt.Sprintf("l%d", asked), "sender_id": "alice", "text": text})
			code, _ := s.post(chat, string(body))
			require.Equal(t, http.StatusAccepted, code)
		},
		bot: func() []shownMessage {
			mu.Lock()
			defer mu.Unlock()
			return append([]shownMessage(nil), shown...)
		},
		waitFor: func(what string, cond func() bool) {
			deadline := time.After(time.Minute)
			for !cond() {
				select {
				case <-changed:
				case <-time.After(100 * time.Millisecond): // the state query is not an event
				case <-deadline:
					require.Fail(t, "timed out waiting for "+what)
				}
			}
		},
		state: func() workflows.Snapshot { return s.state(chat) },
	}, oa, an
}

// A model that breaks off mid-stream hands its preview to the fallback,
// which finishes it: one message, on every platform.
func TestAFallbackMidStreamFinishesThePreviewOnEveryPlatform(t *testing.T) {
	t.Parallel()
	for _, platform := range []string{"webchat", "slack", "discord"} {
		t.Run(platform, func(t *testing.T) {
			t.Parallel()
			chat, oa, an := newLiveChat(t, platform, pipeline.StreamPreview)
			oa.Push(modeltest.Step{Text: sentence(40), TokenDelay: 60 * time.Millisecond, BreakAfter: 15})
			final := "The fallback's whole answer, from the start."
			an.Push(modeltest.Step{Text: final})
			chat.ask("go on")
			chat.waitFor("the fallback's answer", func() bool {
				got := chat.bot()
				return len(got) > 0 && got[len(got)-1].Text == final
			})
			got := chat.bot()
			require.Len(t, got, 1, "the fallback edited the preview the first model began")
			assert.GreaterOrEqual(t, got[0].Edits, 1)
			assert.Equal(t, []string{"openai/gpt-test: " + pipeline.ErrTimeout}, chat.state().LastTurn.Fallback)
		})
	}
}

// /stop mid-stream keeps what was written and says it was stopped, on
// every platform.
func TestStopMidStreamKeepsThePreviewOnEveryPlatform(t *testing.T) {
	t.Parallel()
	for _, platform := range []string{"webchat", "slack", "discord"} {
		t.Run(platform, func(t *testing.T) {
			t.Parallel()
			chat, oa, _ := newLiveChat(t, platform, pipeline.StreamPreview)
			oa.Push(modeltest.Step{Text: sentence(200), TokenDelay: 50 * time.Millisecond})
			chat.ask("talk for a while")
			chat.waitFor("a preview edited once", func() bool {
				got := chat.bot()
				return len(got) == 1 && got[0].Edits >= 1
			})
			chat.ask("/stop")
			chat.waitFor("the preview marked stopped", func() bool {
				got := chat.bot()
				return len(got) >= 1 && strings.HasSuffix(got[0].Text, strings.TrimSpace(pipeline.StoppedMark))
			})
			assert.True(t, strings.HasPrefix(chat.bot()[0].Text, "w0 w1"), "what was written stays")
			chat.waitFor("the turn aborted", func() bool {
				last := chat.state().LastTurn
				return last != nil && last.Outcome == "aborted"
			})
		})
	}
}
