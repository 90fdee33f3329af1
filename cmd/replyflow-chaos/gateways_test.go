package main

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/cmd/internal/harness"
)

// serveBalancer serves b on a free port until the test ends and returns
// its base URL.
func serveBalancer(t *testing.T, b *harness.HTTPBalancer) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: b, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// postSlackEvent delivers an Events API request as Slack does: signed,
// and again (up to three retries, marked as such) until a 2xx.
func postSlackEvent(t *testing.T, fake *slacktest.Server, url string, ev slacktest.Event) {
	t.Helper()
	for try := 0; ; try++ {
		redelivery := slacktest.Redelivery{}
		if try > 0 {
			redelivery = slacktest.Redelivery{Num: try, Reason: "http_error"}
		}
		resp, err := http.DefaultClient.Do(fake.EventRequest(context.Background(), url, ev, redelivery))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return
			}
		}
		require.Less(t, try, 3, "Slack gives up after three retries: %v", err)
		time.Sleep(time.Duration(200*(try+1)) * time.Millisecond)
	}
}

// Telegram's webhook and Slack's Events API served by two gateways behind
// one address: each platform's requests alternate between the gateways
// (a balancer of their own), one gateway is killed halfway and started
// again, and every message is answered exactly once, whichever gateway
// took it (the session's dedupe catches a delivery taken twice).
func TestTwoGatewaysBehindOneAddressAnswerEveryMessageOnce(t *testing.T) {
	cluster, bin := sharedCluster(t)
	dir := t.TempDir()
	ctx := context.Background()
	store, err := cluster.NewDatabase(ctx, "gateways")
	require.NoError(t, err)
	tg := telegramtest.New("4545:gateways")
	defer tg.Close()
	sl := slacktest.New(slacktest.Options{})
	defer sl.Close()

	ports, err := harness.FreePorts(2)
	require.NoError(t, err)
	var backends []string
	for _, port := range ports {
		backends = append(backends, "http://127.0.0.1:"+strconv.Itoa(port))
	}
	tgBalancer, slBalancer := harness.NewHTTPBalancer(backends...), harness.NewHTTPBalancer(backends...)
	tgURL, slURL := serveBalancer(t, tgBalancer), serveBalancer(t, slBalancer)

	vars := map[string]string{"DEBOUNCE": "0", "LOG_LEVEL": "info"}
	maps.Copy(vars, harness.SlackVars(sl))
	vars["SLACK_MODE"], vars["SLACK_APP_TOKEN"], vars["SLACK_SIGNING_SECRET"] = "events", "", sl.SigningSecret
	maps.Copy(vars, (&telegramPlatform{fake: tg}).webhookEnv(tgURL))
	env := harness.Env(cluster.Address, "gateways", store, tg, vars)
	startProc(t, harness.Worker(bin, env, filepath.Join(dir, "worker.log")))
	c, err := harness.Dial(ctx, cluster.Address, "")
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, harness.AwaitCurrentVersion(ctx, c, "replyflow", ""))
	var gateways []*harness.Proc
	for i, port := range ports {
		g := harness.GatewayAt(bin, env, filepath.Join(dir, fmt.Sprintf("gateway%d.log", i+1)), "127.0.0.1:"+strconv.Itoa(port))
		startProc(t, g)
		gateways = append(gateways, g)
	}

	const chats, rounds = 3, 6
	type said struct{ chat, token string }
	var telegramSaid, slackSaid []said
	for round := range rounds {
		if round == rounds/2 {
			gateways[0].Kill() // the balancers go on with the other
		}
		if round == rounds/2+1 {
			require.NoError(t, gateways[0].Start())
		}
		for i := range chats {
			token := fmt.Sprintf("[g%d-r%d]", i, round)
			chat := telegramChat{tg, telegramtest.Private(int64(8_200_000 + i))}
			chat.say("hello " + token)
			telegramSaid = append(telegramSaid, said{strconv.FormatInt(chat.chat.ID, 10), token})

			channel := fmt.Sprintf("DGW%03d", i)
			if round == 0 {
				sl.AddChannel(slacktest.Channel{ID: channel, Members: 2})
			}
			_, events := sl.AddMessage(slacktest.Post{Channel: channel, User: fmt.Sprintf("U0GW%03d", i), Text: "hello " + token})
			for _, ev := range events {
				postSlackEvent(t, sl, slURL+"/slack/events", ev)
			}
			slackSaid = append(slackSaid, said{channel, token})
		}
		// Each round answered before the next, so a round's messages are
		// not merged into one turn, and the kill lands between turns.
		waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
		require.NoError(t, tg.WaitFor(waitCtx, func() bool {
			return countTelegram(tg, telegramSaid[len(telegramSaid)-1].chat, telegramSaid[len(telegramSaid)-1].token) > 0
		}))
		require.NoError(t, sl.WaitFor(waitCtx, func() bool {
			return countSlack(sl, slackSaid[len(slackSaid)-1].chat, slackSaid[len(slackSaid)-1].token) > 0
		}))
		cancel()
	}

	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_ = tg.WaitFor(waitCtx, func() bool {
		for _, s := range telegramSaid {
			if countTelegram(tg, s.chat, s.token) == 0 {
				return false
			}
		}
		return true
	})
	_ = sl.WaitFor(waitCtx, func() bool {
		for _, s := range slackSaid {
			if countSlack(sl, s.chat, s.token) == 0 {
				return false
			}
		}
		return true
	})
	for _, s := range telegramSaid {
		assert.Equal(t, 1, countTelegram(tg, s.chat, s.token), "telegram chat %s: answers to %s", s.chat, s.token)
	}
	for _, s := range slackSaid {
		assert.Equal(t, 1, countSlack(sl, s.chat, s.token), "slack channel %s: answers to %s", s.chat, s.token)
	}
	for name, b := range map[string]*harness.HTTPBalancer{"telegram": tgBalancer, "slack": slBalancer} {
		served := b.Served()
		for _, backend := range backends {
			assert.Positive(t, served[backend], "%s: gateway %s took none of the requests (%v)", name, backend, served)
		}
	}
}

func countTelegram(fake *telegramtest.Server, chat, token string) int {
	id, _ := strconv.ParseInt(chat, 10, 64)
	n := 0
	for _, m := range fake.Sent(id) {
		if strings.Contains(m.Text, token) {
			n++
		}
	}
	return n
}

func countSlack(fake *slacktest.Server, channel, token string) int {
	n := 0
	for _, m := range fake.Sent(channel) {
		if strings.Contains(m.Text, token) {
			n++
		}
	}
	return n
}
