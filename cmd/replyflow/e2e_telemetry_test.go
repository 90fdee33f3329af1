package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/workers"
	"github.com/replyflow/replyflow/workers/telemetry"
	"github.com/replyflow/replyflow/workflows"
)

// scrape reads a /metrics page.
func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

// sample is the value of the series named name whose labels include each
// of labels ("k=\"v\""); -1 when there is none.
func sample(page, name string, labels ...string) float64 {
	line := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\{([^}]*)\} (\S+)$`)
	for _, m := range line.FindAllStringSubmatch(page, -1) {
		all := true
		for _, l := range labels {
			if !regexp.MustCompile(`(^|,)` + regexp.QuoteMeta(l) + `(,|$)`).MatchString(m[1]) {
				all = false
			}
		}
		if all {
			v, _ := strconv.ParseFloat(m[2], 64)
			return v
		}
	}
	return -1
}

func TestMetricsShowTheSDKsAndReplyflowsSeriesAfterAConversation(t *testing.T) {
	tel, err := telemetry.New()
	require.NoError(t, err)
	cfg := testConfig(t)
	cfg.tel = tel
	c, err := dialTemporal(context.Background(), cfg, temporalServer.FrontendHostPort(), testLogger(t, "info"))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	s := startStackOn(t, cfg, c)
	s.startWorker(nil)
	metrics := httptest.NewServer(tel.Mux())
	t.Cleanup(metrics.Close)

	chat := uniqueChat("tm-metrics")
	events := subscribe(t, s.baseURL, chat)
	code, body := s.post(chat, `{"message_id":"m1","sender_id":"alice","text":"hello"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	events.collectUntil(t, 30*time.Second, isReplyTo("m1"))

	var page string
	counted := assert.Eventually(t, func() bool {
		page = scrape(t, metrics.URL+"/metrics")
		return sample(page, workflows.MetricTurns, `outcome="answered"`) >= 1
	}, 30*time.Second, 200*time.Millisecond, "the turn is counted")
	if !counted {
		t.Fatalf("the series on the page:\n%s", seriesNames(page))
	}
	assert.Equal(t, 1.0, sample(page, workflows.MetricTurns, `channel="webchat"`, `outcome="answered"`), "once: replays record nothing")
	assert.Equal(t, 1.0, sample(page, "replyflow_inbound", `channel="webchat"`, `outcome="accepted"`))
	assert.Equal(t, 1.0, sample(page, workflows.MetricModelAttempts, `model="demo/echo"`, `provider="demo"`, `error="none"`))
	assert.Equal(t, 1.0, sample(page, workflows.MetricDeliveries, `outcome="delivered"`))
	assert.Regexp(t, `(?m)^replyflow_turn_duration\S*_count\{[^}]*outcome="answered"[^}]*\} 1$`, page, "turn duration is a histogram")
	assert.Regexp(t, `(?m)^replyflow_first_chunk_latency\S*_count\{[^}]*channel="webchat"[^}]*\} 1$`, page, "accepted to first chunk is a histogram")
	assert.Greater(t, sample(page, "replyflow_platform_last_event_timestamp_seconds", `channel="webchat"`), float64(time.Now().Add(-time.Minute).Unix()))
	assert.Regexp(t, `(?m)^temporal_workflow_task_execution_latency\S*_count\{`, page, "the SDK's own series come through its handler")
	assert.Regexp(t, `(?m)^temporal_activity_execution_latency\S*_count\{[^}]*activity_type="AgentTurn"`, page)

	resp, err := http.Get(metrics.URL + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the worker's checks pass")
	assert.Equal(t, []string{"platforms", "starting", "stopping", "temporal", "worker " + s.cfg.TaskQueue}, tel.Names(), "the gateway and the worker of this process (started)")
}

// The gauges of what stands now come from the Temporal server's
// visibility: a session waiting for a decision is counted in its state,
// its proposal as pending, and the task queue shows the worker's pollers
// while a queue no worker polls shows none.
func TestGaugesShowWhatStandsNowFromTheServer(t *testing.T) {
	tool, _ := payServer(t)
	tel, err := telemetry.New()
	require.NoError(t, err)
	cfg := proposalConfig(t, tool.URL)
	cfg.tel = tel
	s := startStack(t, cfg)
	s.startWorker(payingModel{})
	metrics := httptest.NewServer(tel.Mux())
	t.Cleanup(metrics.Close)

	chat := uniqueChat("gauges")
	events := subscribe(t, s.baseURL, chat)
	code, _ := s.post(chat, `{"message_id":"g1","sender_id":"alice","text":"pay bob 5"}`)
	require.Equal(t, http.StatusAccepted, code)
	events.collectUntil(t, 30*time.Second, isButtonsMessage)

	// Read here rather than wait for the worker's next read; visibility
	// follows a session's upserts within moments.
	gauges := workers.Gauges{Client: s.client, TaskQueue: s.cfg.TaskQueue, Metrics: tel.MetricsHandler(), Sessions: true, Logger: s.logger}
	unpolled := workers.Gauges{Client: s.client, TaskQueue: s.cfg.TaskQueue + "-nobody", Metrics: tel.MetricsHandler(), Logger: s.logger}
	tq := `task_queue="` + s.cfg.TaskQueue + `"`
	var page string
	counted := assert.Eventually(t, func() bool {
		if gauges.Read(context.Background()) != nil || unpolled.Read(context.Background()) != nil {
			return false
		}
		page = scrape(t, metrics.URL+"/metrics")
		return sample(page, workers.MetricSessions, tq, `state="waiting_user"`) == 1 && sample(page, workers.MetricProposalsPending, tq) == 1 &&
			sample(page, workers.MetricTaskQueuePollers, tq, `type="activity"`) > 0
	}, 30*time.Second, 200*time.Millisecond, "the session waits for a decision on one proposal, and a worker polls")
	if !counted {
		t.Fatalf("the gauges on the page:\n%s", grepLines(page, "replyflow_sessions", "replyflow_proposals_pending", "replyflow_task_queue_pollers"))
	}
	assert.Equal(t, 0.0, sample(page, workers.MetricSessions, tq, `state="delivery_failed"`))
	assert.Greater(t, sample(page, workers.MetricTaskQueuePollers, tq, `type="workflow"`), 0.0)
	assert.Equal(t, 0.0, sample(page, workers.MetricTaskQueuePollers, `task_queue="`+s.cfg.TaskQueue+`-nobody"`, `type="workflow"`))
	assert.Greater(t, sample(page, workers.MetricGaugesUpdated, tq), float64(time.Now().Add(-time.Minute).Unix()))
	assert.Regexp(t, `(?m)^replyflow_ready_check\{check="temporal"\} 1$`, page)
}

// grepLines keeps the lines of a page that start with one of prefixes.
func grepLines(page string, prefixes ...string) string {
	var out []string
	for _, l := range strings.Split(page, "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

func TestReadyzFollowsTheTemporalServer(t *testing.T) {
	start, hostPort := restartableDevServer(t)
	server := start()
	c, err := dialTemporal(context.Background(), Config{}, hostPort, testLogger(t, "info"))
	require.NoError(t, err)
	defer c.Close()
	s := startStackOn(t, testConfig(t), c)

	operator := "Bearer " + webchatOf(s.cfg).BotToken
	var raw string
	readyAs := func(auth string) (int, map[string]any) {
		req, err := http.NewRequest(http.MethodGet, s.baseURL+"/readyz", nil)
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		raw = string(data)
		var body map[string]any
		require.NoError(t, json.Unmarshal(data, &body))
		return resp.StatusCode, body
	}
	ready := func() (int, map[string]any) { return readyAs(operator) }
	require.Eventually(t, func() bool { code, _ := ready(); return code == http.StatusOK }, 30*time.Second, 100*time.Millisecond,
		"ready with Temporal up and the web chat serving")

	require.NoError(t, server.Stop())
	var body map[string]any
	require.Eventually(t, func() bool {
		var code int
		code, body = ready()
		return code == http.StatusServiceUnavailable
	}, 30*time.Second, 200*time.Millisecond, "unready while Temporal is down")
	failing, _ := body["failing"].(map[string]any)
	assert.Contains(t, failing["temporal"], "Temporal is not reachable", "the operator is told why")
	var out strings.Builder
	t.Setenv("TEMPORAL_ADDRESS", hostPort)
	_ = statusCommand(context.Background(), s.cfg, []string{"--ready", s.baseURL + "/readyz"}, &out, testLogger(t, "info"))
	assert.Contains(t, out.String(), "temporal: Temporal is not reachable", "and so is replyflow status")

	code, body := readyAs("")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, map[string]any{"temporal": telemetry.Withheld}, body["failing"], "anyone else is told what fails, not why")
	assert.NotContains(t, raw, hostPort)

	server = start()
	defer server.Stop()
	require.Eventually(t, func() bool { code, _ := ready(); return code == http.StatusOK }, 60*time.Second, 200*time.Millisecond,
		"ready again once Temporal is back")
}

// seriesNames are the distinct series names of a page, for a failure.
func seriesNames(page string) string {
	seen := map[string]bool{}
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^([a-z_]+)`).FindAllString(page, -1) {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return strings.Join(out, "\n")
}
