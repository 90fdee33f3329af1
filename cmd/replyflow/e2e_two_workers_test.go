package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/cmd/internal/harness"
)

// Every reaction is cleared, and every chunk sent once, when one
// message's reactions are set by two workers (real processes) on each
// platform. Worker 1 shows 👀 and stalls (SIGSTOP, as a long pause or a
// starved machine stalls a process); the session moves to worker 2,
// which answers and shows ✅; worker 2 stops and worker 1 wakes, takes
// the session back and clears the reaction, with what it remembers of
// the message from before its stall.
func TestReactionsAreClearedAcrossTwoWorkers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin, err := harness.Build(dir)
	require.NoError(t, err)
	for _, platform := range []string{"slack", "discord", "telegram", "webchat"} {
		t.Run(platform, func(t *testing.T) {
			t.Parallel()
			pdir := filepath.Join(dir, platform)
			require.NoError(t, os.MkdirAll(pdir, 0o755))
			reactionsAcrossTwoWorkers(t, bin, pdir, newTwoWorkerChat(t, platform))
		})
	}
}

// twoWorkerChat is a chat on one platform's fake, for processes that
// run on it.
type twoWorkerChat struct {
	env map[string]string
	// gatewayAddr, when set, is where the gateway must serve (the web
	// chat's own API).
	gatewayAddr string
	up          func() bool
	// ask posts text as a user and returns the message's ID.
	ask func(text string) string
	// reactions are the bot's reactions on a user message now.
	reactions      func(id string) []string
	received, done string // the platform's emoji for 👀 and ✅
	// replies are the texts of the bot's messages.
	replies func() []string
	waitFor func(ctx context.Context, cond func() bool) error
}

func reactionsAcrossTwoWorkers(t *testing.T, bin, dir string, chat twoWorkerChat) {
	oa := modeltest.NewOpenAI()
	t.Cleanup(oa.Close)
	const answer = "One answer, sent once, its reaction cleared."
	oa.Push(modeltest.Step{Text: answer})
	vars := map[string]string{
		"MODEL": "openai/gpt-test", "STREAM": "off", "LOG_LEVEL": "info",
		// The turn starts after the debounce window, so worker 1 stalls
		// with the 👀 shown and nothing else under way.
		"DEBOUNCE": "3s", "DEBOUNCE_MAX_WAIT": "5s",
		// Worker 2 is stopped well before the clear comes due, which
		// worker 1 then sends.
		"REACTION_CLEAR_DELAY": "5s",
	}
	maps.Copy(vars, chat.env)
	env := harness.Env(temporalServer.FrontendHostPort(), fmt.Sprintf("twoworkers-%d", queueSeq.Add(1)), filepath.Join(dir, "store.db"), nil, vars)
	env = append(env, "OPENAI_BASE_URL="+oa.URL+"/v1", "OPENAI_API_KEY=test")
	var startWorker func(int) *harness.Proc
	if chat.gatewayAddr != "" {
		startWorker = realProcessesWith(t, harness.GatewayAt(bin, env, filepath.Join(dir, "gateway.log"), chat.gatewayAddr), bin, dir, env)
	} else {
		startWorker = realProcesses(t, bin, dir, env)
	}
	waitOn := func(what string, cond func() bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		require.NoError(t, chat.waitFor(ctx, cond), "waiting for %s", what)
	}
	shows := func(id, emoji string) func() bool {
		return func() bool {
			got := chat.reactions(id)
			return len(got) == 1 && got[0] == emoji
		}
	}

	first := startWorker(1)
	waitOn("the gateway connected", chat.up)
	asked := chat.ask("a question")
	waitOn("👀 from worker 1", shows(asked, chat.received))
	require.NoError(t, syscall.Kill(first.Pid(), syscall.SIGSTOP))
	t.Cleanup(func() { _ = syscall.Kill(first.Pid(), syscall.SIGCONT) })

	second := startWorker(2)
	waitOn("the answer and ✅ from worker 2", func() bool {
		return len(chat.replies()) > 0 && shows(asked, chat.done)()
	})
	second.Stop()
	require.Eventually(t, func() bool { return !second.Running() }, time.Minute, 10*time.Millisecond, "worker 2 stopped")
	require.NoError(t, syscall.Kill(first.Pid(), syscall.SIGCONT))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := chat.waitFor(ctx, func() bool { return len(chat.reactions(asked)) == 0 })
	require.NoError(t, err, "waiting for worker 1 to clear the reaction; the bot's reactions on the message: %q", chat.reactions(asked))
	assert.Equal(t, []string{answer}, chat.replies(), "the answer, sent once")
	assert.Len(t, oa.Requests(), 1, "the model was asked once")
}

func newTwoWorkerChat(t *testing.T, platform string) twoWorkerChat {
	switch platform {
	case "slack":
		fake := slacktest.New(slacktest.Options{})
		t.Cleanup(fake.Close)
		channel := uniqueSlackChannel("DTWO")
		fake.AddChannel(slacktest.Channel{ID: channel, Members: 2})
		return twoWorkerChat{
			env: harness.SlackVars(fake),
			up:  func() bool { return fake.Connections() > 0 },
			ask: func(text string) string {
				post, events := fake.AddMessage(slacktest.Post{Channel: channel, User: "U0TWO", Text: text})
				for _, ev := range events {
					fake.SendEvent(ev)
				}
				return post.TS
			},
			reactions: func(ts string) []string { return fake.Reactions(channel, ts) },
			received:  "eyes", done: "white_check_mark",
			replies: func() (out []string) {
				for _, m := range slackShown(fake, channel)() {
					out = append(out, m.Text)
				}
				return out
			},
			waitFor: fake.WaitFor,
		}
	case "discord":
		const user = "840000000000000001"
		// A bot of its own: the catch-up after READY lists every running
		// session of its bot on the shared Temporal server.
		fake := discordtest.New(discordtest.Options{BotID: newSnowflake()})
		t.Cleanup(fake.Close)
		channel := newSnowflake()
		fake.AddChannel(discordtest.Channel{ID: channel, Type: discordtest.DM, Recipient: user})
		return twoWorkerChat{
			env: harness.DiscordVars(fake),
			up:  func() bool { return fake.Connections() > 0 },
			ask: func(text string) string {
				return fake.Post(discordtest.Post{Channel: channel, Author: user, Content: text}).ID
			},
			reactions: func(id string) []string { return fake.Reactions(channel, id) },
			received:  "👀", done: "✅",
			replies: func() (out []string) {
				for _, m := range discordShown(fake, channel)() {
					out = append(out, m.Text)
				}
				return out
			},
			waitFor: fake.WaitFor,
		}
	case "telegram":
		// A bot and a chat of their own: sessions outlive a test on the
		// shared server.
		fake := telegramtest.New(fmt.Sprintf("%d:twoworkers", uniqueTelegramID()))
		t.Cleanup(fake.Close)
		chat := telegramtest.Private(uniqueTelegramID())
		return twoWorkerChat{
			env: harness.TelegramVars(fake),
			up:  func() bool { return true },
			ask: func(text string) string {
				return strconv.Itoa(fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: text}))
			},
			reactions: func(id string) []string {
				msg, _ := strconv.Atoi(id)
				changes := fake.Reactions(chat.ID, msg)
				if len(changes) == 0 {
					return nil
				}
				return changes[len(changes)-1].Emoji
			},
			received: "👀", done: "👌",
			replies: func() []string { return sentTexts(fake, chat) },
			waitFor: fake.WaitFor,
		}
	}
	return newTwoWorkerWebChat(t)
}

// newTwoWorkerWebChat is a web chat served by the gateway process at an
// address of the test's, read through the chat's event stream.
func newTwoWorkerWebChat(t *testing.T) twoWorkerChat {
	port, err := harness.FreePort()
	require.NoError(t, err)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	base := "http://" + addr
	chat := uniqueChat("twoworkers")
	web := &webChatView{reactions: map[string]string{}, changed: make(chan struct{}, 1)}
	var once sync.Once
	return twoWorkerChat{
		env: map[string]string{
			"WEBCHAT_ENABLED": "true", "WEBCHAT_URL": base, "WEBCHAT_BOT_TOKEN": "two-workers-bot-token", "WEBCHAT_AUTH": "none",
		},
		gatewayAddr: addr,
		up: func() bool {
			resp, err := http.Get(base + "/healthz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			once.Do(func() { web.follow(t, base, chat) })
			return true
		},
		ask: func(text string) string {
			id := fmt.Sprintf("w%d", queueSeq.Add(1))
			body, _ := json.Marshal(map[string]string{"message_id": id, "sender_id": "alice", "text": text})
			resp, err := http.Post(base+"/api/chats/"+chat+"/messages", "application/json", strings.NewReader(string(body)))
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusAccepted, resp.StatusCode)
			return id
		},
		reactions: web.reactionsOn,
		received:  "👀", done: "✅",
		replies: web.messages,
		waitFor: web.waitFor,
	}
}

// webChatView is what the chat's event stream showed: the bot's
// messages, and the reaction each user message shows now.
type webChatView struct {
	mu        sync.Mutex
	reactions map[string]string
	texts     []string
	changed   chan struct{}
}

// follow reads the chat's events until the test ends.
func (v *webChatView) follow(t *testing.T, base, chat string) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/chats/"+chat+"/events", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	go func() {
		defer resp.Body.Close()
		scanner := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for scanner.Scan() {
			line := scanner.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev = sseEvent{Type: strings.TrimPrefix(line, "event: ")}
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev)
			case line == "" && ev.Type != "":
				v.mu.Lock()
				switch ev.Type {
				case "reaction":
					v.reactions[ev.MessageID] = ev.Emoji
				case "message":
					v.texts = append(v.texts, ev.Text)
				}
				v.mu.Unlock()
				select {
				case v.changed <- struct{}{}:
				default:
				}
				ev = sseEvent{}
			}
		}
	}()
}

func (v *webChatView) reactionsOn(id string) []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if e := v.reactions[id]; e != "" {
		return []string{e}
	}
	return nil
}

func (v *webChatView) messages() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.texts...)
}

// waitFor returns once cond holds, checking it after every event (and
// every 100 ms, for a gateway not yet up).
func (v *webChatView) waitFor(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-v.changed:
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
