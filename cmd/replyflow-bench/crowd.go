package main

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/cmd/internal/harness"
	"github.com/replyflow/replyflow/pipeline"
)

// crowdChat is one chat of a crowd run on Slack or Discord: how to ask
// in it, and the bot's messages there as the user sees them.
type crowdChat struct {
	ask func(text string)
	bot func() []string
}

// crowdFake is a fake Slack or Discord with crowdChats chats, enforcing
// the platform's published limits, and what the run reads of it.
type crowdFake struct {
	vars    map[string]string
	up      func() bool
	chats   []crowdChat
	waitFor func(ctx context.Context, cond func() bool) error
	edits   func() int // edits answered 2xx
	tooMany func() int // 429s answered
	// tooManyBy names the routes or methods answered 429, with how many.
	tooManyBy func() string
	close     func()
}

// where are the calls keep keeps.
func where[C any](calls []C, keep func(C) bool) []C {
	var out []C
	for _, c := range calls {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out
}

// names are the calls' names.
func names[C any](calls []C, name func(C) string) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = name(c)
	}
	return out
}

// countBy is "name: n, …" of the names counted, in order.
func countBy(names []string) string {
	n := map[string]int{}
	for _, name := range names {
		n[name]++
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(n)) {
		out = append(out, fmt.Sprintf("%s: %d", name, n[name]))
	}
	return strings.Join(out, ", ")
}

// newCrowdFake makes the fake; run numbers its chats apart from other
// runs' (a session outlives its run on the shared server, and a chat of
// the same ID would signal it there).
func newCrowdFake(platform string, run int64) crowdFake {
	switch platform {
	case "slack":
		fake := slacktest.New(slacktest.Options{})
		fake.EnforceLimits(slacktest.PublishedLimits)
		f := crowdFake{
			vars: harness.SlackVars(fake), up: func() bool { return fake.Connections() > 0 }, waitFor: fake.WaitFor, close: fake.Close,
			edits: func() int {
				return len(where(fake.Calls("chat.update"), func(c slacktest.Call) bool { return c.Status == 200 && c.Error == "" }))
			},
			tooMany: fake.RateLimitedAnswered,
			tooManyBy: func() string {
				limited := where(fake.Calls(), func(c slacktest.Call) bool { return c.Status == http.StatusTooManyRequests })
				return countBy(names(limited, func(c slacktest.Call) string { return c.Method }))
			},
		}
		f.vars["SLACK_POST_INTERVAL"] = "1s" // the delivery budget at Slack's limits
		for i := range crowdChats {
			channel := fmt.Sprintf("DCROWD%X%02d", run, i)
			fake.AddChannel(slacktest.Channel{ID: channel, Members: 2})
			f.chats = append(f.chats, crowdChat{
				ask: func(text string) {
					_, events := fake.AddMessage(slacktest.Post{Channel: channel, User: fmt.Sprintf("UCROWD%02d", i), Text: text})
					for _, ev := range events {
						fake.SendEvent(ev)
					}
				},
				bot: func() (out []string) {
					for _, m := range fake.Sent(channel) {
						out = append(out, m.Text)
					}
					return out
				},
			})
		}
		return f
	default:
		fake := discordtest.New(discordtest.Options{})
		fake.EnforceLimits(discordtest.PublishedLimits)
		f := crowdFake{
			vars: harness.DiscordVars(fake), up: func() bool { return fake.Connections() > 0 }, waitFor: fake.WaitFor, close: fake.Close,
			edits: func() int {
				return len(where(fake.Calls(discordtest.RouteEdit), func(c discordtest.Call) bool { return c.Status >= 200 && c.Status < 300 }))
			},
			tooMany: fake.RateLimitedAnswered,
			tooManyBy: func() string {
				limited := where(fake.Calls(), func(c discordtest.Call) bool { return c.Status == http.StatusTooManyRequests })
				return countBy(names(limited, func(c discordtest.Call) string { return c.Route }))
			},
		}
		for i := range crowdChats {
			user := strconv.FormatInt(810000000000000000+run*100+int64(i), 10)
			channel := strconv.FormatInt(820000000000000000+run*100+int64(i), 10)
			fake.AddUser(discordtest.User{ID: user, Name: "bench" + strconv.Itoa(i)})
			fake.AddChannel(discordtest.Channel{ID: channel, Type: discordtest.DM, Recipient: user})
			f.chats = append(f.chats, crowdChat{
				ask: func(text string) { fake.Post(discordtest.Post{Channel: channel, Author: user, Content: text}) },
				bot: func() (out []string) {
					for _, m := range fake.Sent(channel) {
						out = append(out, m.Content)
					}
					return out
				},
			})
		}
		return f
	}
}

// crowdOn is benchStreamingCrowd's run on Slack or Discord, with the
// real gateway and worker processes: each reply is timed from the
// message's event reaching the gateway to the bot's message showing the
// whole answer.
func crowdOn(ctx context.Context, c client.Client, o options, platform string, mode pipeline.StreamMode) (crowdRun, error) {
	model := modeltest.NewOpenAI()
	defer model.Close()
	model.Push(slices.Repeat([]modeltest.Step{{Text: streamedAnswer(), TokenDelay: streamPace}}, crowdChats*crowdTurns)...)
	fake := newCrowdFake(platform, time.Now().UnixNano()%1_000_000_000)
	defer fake.close()

	name := fmt.Sprintf("crowd-%s-%s", platform, mode)
	queue := fmt.Sprintf("bench-%s-%d", name, time.Now().UnixNano())
	deployment := "bench-" + name
	vars := map[string]string{
		"MODEL": "openai/bench-crowd", "STREAM": string(mode), "DEBOUNCE": "0", "REACTION_CLEAR_DELAY": "0s",
		"CODEC_KEYS": o.codecKeys, "WORKER_VERSIONING": strconv.FormatBool(!o.unversioned), "DEPLOYMENT_NAME": deployment,
	}
	maps.Copy(vars, fake.vars)
	env := append(harness.Env(o.address, queue, filepath.Join(o.workDir, name+".db"), nil, vars), o.rawEnv...)
	env = append(env, "OPENAI_BASE_URL="+model.URL+"/v1", "OPENAI_API_KEY=bench")
	worker := harness.Worker(o.replyflow, env, filepath.Join(o.workDir, name+"-worker.log"))
	if err := worker.Start(); err != nil {
		return crowdRun{}, err
	}
	defer worker.Stop()
	gw, err := harness.Gateway(o.replyflow, env, filepath.Join(o.workDir, name+"-gateway.log"))
	if err != nil {
		return crowdRun{}, err
	}
	if err := gw.Start(); err != nil {
		return crowdRun{}, err
	}
	defer gw.Stop()
	withLogs := func(err error) error {
		return fmt.Errorf("%w\nworker log:\n%s\ngateway log:\n%s", err, worker.Tail(), gw.Tail())
	}
	if !o.unversioned {
		if err := harness.AwaitCurrentVersion(ctx, c, deployment, ""); err != nil {
			return crowdRun{}, withLogs(err)
		}
	}
	upCtx, cancel := context.WithTimeout(ctx, time.Minute)
	err = fake.waitFor(upCtx, fake.up)
	cancel()
	if err != nil {
		return crowdRun{}, withLogs(fmt.Errorf("the gateway never connected to the fake %s: %w", platform, err))
	}

	answer := strings.Join(strings.Fields(streamedAnswer()), " ")
	complete := func(ch crowdChat, n int) func() bool {
		return func() bool {
			whole := 0
			for _, text := range ch.bot() {
				if strings.Join(strings.Fields(text), " ") == answer {
					whole++
				}
			}
			return whole >= n
		}
	}
	var (
		mu   sync.Mutex
		run  = crowdRun{answers: crowdChats * crowdTurns}
		wg   sync.WaitGroup
		edit = fake.edits()
	)
	for _, ch := range fake.chats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range crowdTurns {
				asked := time.Now()
				ch.ask(fmt.Sprintf("tell me more, %d", k))
				waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
				err := fake.waitFor(waitCtx, complete(ch, k+1))
				done := time.Now()
				cancel()
				mu.Lock()
				if err != nil {
					run.lost++
				} else {
					run.complete = append(run.complete, done.Sub(asked))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	run.edits, run.tooMany, run.tooManyBy = fake.edits()-edit, fake.tooMany(), fake.tooManyBy()
	if len(run.complete) == 0 {
		var shown []string
		for _, text := range fake.chats[0].bot() {
			shown = append(shown, fmt.Sprintf("%d characters", len(text)))
		}
		return crowdRun{}, withLogs(fmt.Errorf("%s, STREAM=%s: no answer was delivered within a minute (the first chat shows the bot's messages of %s; %d 429s)",
			platform, mode, strings.Join(shown, ", "), fake.tooMany()))
	}
	slices.Sort(run.complete)
	return run, nil
}
