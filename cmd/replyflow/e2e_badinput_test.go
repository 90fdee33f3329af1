package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/adapters/slack"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// badInputDeadline is how long the gateway may take to answer one case:
// a client that waits longer has found a hang.
const badInputDeadline = 15 * time.Second

// badInputWebhookSecret is the Telegram webhook's secret in the corpus run.
const badInputWebhookSecret = "bi-telegram-webhook-secret"

// badInputMediaMaxBytes is REPLYFLOW_MEDIA_MAX_BYTES in the corpus run:
// small, so that a file over it costs little to send.
const badInputMediaMaxBytes = 1 << 20

// The corpus under testdata/badinput (see badinput_corpus_test.go) runs
// against one real gateway serving the web chat, Telegram's webhook and
// Slack's Events API with their secrets set, and a worker, on the shared
// dev server. Each case must get its answer in time, with a reason when
// refused, and leave the gateway healthy; after all of them, exactly the
// accepted cases' sessions exist, and each channel's control request,
// sent last, was accepted. Files are on (REPLYFLOW_MEDIA): what the
// gateway recorded of every accepted file is bounded and clean, each
// accepted session still runs, and the web chat's accepted cases that
// name an answer got it. The stack logs at debug level, so the debug
// lines go through the secret scan too.
func TestBadInputCorpus(t *testing.T) {
	cfg := testConfig(t)
	cfg.LogLevel = "debug"
	// The worker reads the links of accepted cases: every link in the
	// corpus points at this machine, so it must refuse each when dialed.
	cfg.Links = true
	cfg.Media, cfg.MediaMaxBytes = true, badInputMediaMaxBytes
	cfg, _ = withTelegram(t, cfg)
	tg := telegramOf(cfg)
	tg.Mode, tg.WebhookSecret = "webhook", badInputWebhookSecret
	cfg, fakeSlack := withSlack(t, cfg, slackEvents)
	s := &slackStack{stack: startStack(t, cfg), fake: fakeSlack, mode: slackEvents}
	s.waitTelegramUp()
	s.waitSlackUp()
	// The worker takes the demo model for one that sees images, so an
	// accepted image's bytes go as far as a model request; the demo
	// echoes what the turn made of each file.
	s.startWorkerWith(func(acts *activities.Activities) {
		acts.Media.SeesImages = func(string) bool { return true }
	})

	corpus := loadBadInput(t, "testdata/badinput", corpusVars{TelegramSecret: badInputWebhookSecret, WebchatBotToken: webchatOf(cfg).BotToken,
		TelegramNow: time.Now().Unix(), MediaMaxBytes: badInputMediaMaxBytes, Run: queueSeq.Add(1)})
	channels := []string{"webchat", "telegram", "slack"}
	require.ElementsMatch(t, channels, sortedKeys(corpus), "a folder per channel with an HTTP surface (Discord has none: it dials out)")
	accounts := map[string]string{"webchat": "", "telegram": "1000", "slack": fakeSlack.TeamID}
	client := &http.Client{
		Timeout:       badInputDeadline,
		Transport:     &http.Transport{},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	t.Cleanup(client.CloseIdleConnections)
	sender := badInputSender{client: client, baseURL: s.baseURL, signingSecret: fakeSlack.SigningSecret}

	var mustExist, mustNotExist []badInputCase
	for _, channel := range channels {
		for _, c := range corpus[channel] {
			t.Run(channel+"/"+c.Name, func(t *testing.T) {
				for i := range c.Repeat {
					status, body, err := sender.send(c)
					require.NoError(t, err, "delivery %d: no answer within %s", i+1, badInputDeadline)
					assertOutcome(t, c, status, body)
				}
				assertHealthy(t, client, s.baseURL)
			})
			switch {
			case c.Expect.Kind == outcomeAccepted:
				mustExist = append(mustExist, c)
			case c.Session != "":
				mustNotExist = append(mustNotExist, c)
			}
		}
	}

	keyOf := func(c badInputCase) pipeline.SessionKey {
		return pipeline.SessionKey{Channel: c.Channel, Account: accounts[c.Channel], Chat: c.Session}
	}
	t.Run("nothing half-accepted", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, c := range mustNotExist {
			_, err := s.client.DescribeWorkflowExecution(ctx, keyOf(c).WorkflowID(), "")
			var notFound *serviceerror.NotFound
			assert.True(t, errors.As(err, &notFound), "%s/%s was not accepted, yet its session %s exists (err %v)", c.Channel, c.Name, keyOf(c).WorkflowID(), err)
		}
		want := map[string]bool{}
		for _, c := range mustExist {
			want[keyOf(c).WorkflowID()] = true
		}
		// Every session this gateway started is on its task queue, whatever
		// ID a path trick might have given it.
		query := fmt.Sprintf("TaskQueue = %q", cfg.TaskQueue)
		var started map[string]bool
		require.Eventually(t, func() bool {
			started = map[string]bool{}
			resp, err := s.client.ListWorkflow(ctx, listRequest(query))
			if err != nil {
				return false
			}
			for _, e := range resp.Executions {
				started[e.Execution.WorkflowId] = true
			}
			return len(started) >= len(want)
		}, 30*time.Second, 100*time.Millisecond, "visibility lists the accepted sessions")
		assert.Equal(t, want, started, "the sessions on the gateway's task queue are the accepted cases' and no other")
	})
	t.Run("accepted sessions run", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, c := range mustExist {
			d, err := s.client.DescribeWorkflowExecution(ctx, keyOf(c).WorkflowID(), "")
			if assert.NoError(t, err, "%s/%s", c.Channel, c.Name) {
				assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, d.WorkflowExecutionInfo.Status, "%s/%s: session %s", c.Channel, c.Name, keyOf(c).WorkflowID())
			}
		}
	})
	t.Run("answers", func(t *testing.T) {
		for _, c := range mustExist {
			if c.Answer != "" {
				waitForAnswer(t, client, s.baseURL, c)
			}
		}
	})
	t.Run("recorded files are bounded and clean", func(t *testing.T) {
		assertRecordedFilesClean(t, cfg.StoreDSN)
	})
	t.Run("replays counted once", func(t *testing.T) {
		for _, c := range mustExist {
			if c.Seen > 0 {
				assert.Equal(t, c.Seen, settledSeen(t, s.stack, keyOf(c)), "%s/%s: distinct messages in session %s", c.Channel, c.Name, keyOf(c).WorkflowID())
			}
		}
	})
}

// assertOutcome checks one answer against the case.
func assertOutcome(t *testing.T, c badInputCase, status int, body []byte) {
	t.Helper()
	switch c.Expect.Kind {
	case outcomeRefused:
		if c.Expect.Status != 0 {
			assert.Equal(t, c.Expect.Status, status, "answer: %.300s", body)
		} else {
			assert.True(t, status/100 == 4, "a 4xx, got %d: %.300s", status, body)
		}
		reason := reasonOf(body)
		assert.NotEmpty(t, reason, "a refusal says why")
		assert.Contains(t, reason, c.Reason)
	default:
		assert.Equal(t, c.Expect.Status, status, "%s: %.300s", c.Expect.Kind, body)
	}
}

// waitForAnswer waits until the web chat's history of c's chat holds a
// bot message that contains c.Answer.
func waitForAnswer(t *testing.T, client *http.Client, baseURL string, c badInputCase) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		answers := botAnswers(client, baseURL, c.Session)
		if slices.ContainsFunc(answers, func(text string) bool { return strings.Contains(text, c.Answer) }) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("webchat/%s: no answer contains %q; the answers are %q", c.Name, c.Answer, answers)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// botAnswers are the texts of the bot's messages in the web chat's
// history of chat (none while it cannot be read).
func botAnswers(client *http.Client, baseURL, chat string) []string {
	resp, err := client.Get(baseURL + "/api/chats/" + chat + "/history")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var history struct {
		Events []struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		} `json:"events"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&history) != nil {
		return nil
	}
	var texts []string
	for _, ev := range history.Events {
		var msg struct {
			Text string `json:"text"`
		}
		if ev.Type == "message" && json.Unmarshal(ev.Data, &msg) == nil {
			texts = append(texts, msg.Text)
		}
	}
	return texts
}

// assertRecordedFilesClean checks what the gateway recorded of the
// accepted files in the store at dsn: at most pipeline.MaxMedia a
// message, each with a reference and a name that are bounded text
// without control characters (a name is never a path, and PostgreSQL
// stores no NUL).
func assertRecordedFilesClean(t *testing.T, dsn string) {
	t.Helper()
	db, err := sql.Open("sqlite", dsn)
	require.NoError(t, err)
	defer db.Close()
	rows, err := db.Query(`SELECT session_id, message_id, seq, ref, mime_type, name FROM inbound_media`)
	require.NoError(t, err)
	defer rows.Close()
	perMessage := map[string]int{}
	for rows.Next() {
		var session, message, ref, mime, name string
		var seq int
		require.NoError(t, rows.Scan(&session, &message, &seq, &ref, &mime, &name))
		where := fmt.Sprintf("%s message %s file %d", session, message, seq)
		perMessage[session+" "+message]++
		clean := func(s string) bool { return utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl) }
		assert.True(t, ref != "" && len(ref) <= pipeline.MaxRefBytes && clean(ref), "%s: reference %.80q", where, ref)
		assert.True(t, len(mime) <= pipeline.MaxIDBytes && clean(mime), "%s: type %.80q", where, mime)
		assert.True(t, len(name) <= pipeline.MaxNameBytes && clean(name), "%s: name %.80q", where, name)
	}
	require.NoError(t, rows.Err())
	assert.NotEmpty(t, perMessage, "the corpus's accepted files were recorded")
	for message, n := range perMessage {
		assert.LessOrEqual(t, n, pipeline.MaxMedia, "files of %s", message)
	}
}

// reasonOf is the reason a refusal gives: the "error" of a JSON body, or
// the text.
func reasonOf(body []byte) string {
	var answer struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &answer) == nil {
		return answer.Error
	}
	return strings.TrimSpace(string(body))
}

func assertHealthy(t *testing.T, client *http.Client, baseURL string) {
	t.Helper()
	resp, err := client.Get(baseURL + "/healthz")
	require.NoError(t, err, "the gateway answers /healthz after the case")
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "/healthz after the case")
}

// settledSeen is how many distinct messages the session holds once it
// has handled everything it was sent: no workflow task pending.
func settledSeen(t *testing.T, s *stack, key pipeline.SessionKey) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.Eventually(t, func() bool {
		d, err := s.client.DescribeWorkflowExecution(ctx, key.WorkflowID(), "")
		return err == nil && d.PendingWorkflowTask == nil
	}, 30*time.Second, 50*time.Millisecond, "session %s handles what it was sent", key.WorkflowID())
	v, err := s.client.QueryWorkflow(ctx, key.WorkflowID(), "", workflows.QueryState)
	require.NoError(t, err)
	var snap workflows.Snapshot
	require.NoError(t, v.Get(&snap))
	return snap.SeenMessages
}

// badInputSender sends cases to the gateway.
type badInputSender struct {
	client        *http.Client
	baseURL       string
	signingSecret string
}

// send sends c once and returns the answer.
func (b badInputSender) send(c badInputCase) (int, []byte, error) {
	req, err := http.NewRequest(c.Method, b.baseURL+"/", bytes.NewReader(c.Body))
	if err != nil {
		return 0, nil, err
	}
	// The path goes on the request line as the case wrote it.
	req.URL.Opaque, req.URL.RawQuery, _ = strings.Cut(c.Path, "?")
	if len(c.Body) == 0 {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	if c.Chunked {
		req.ContentLength = -1
		req.Body = io.NopCloser(bytes.NewReader(c.Body))
	}
	for _, h := range c.Headers {
		req.Header.Add(h[0], h[1])
	}
	if c.Sign != "" {
		signSlack(req.Header, c.Sign, b.signingSecret, c.Body, time.Now())
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, body, err
}

// slackSignModes are how a case may sign its request as Slack does: right
// ("slack"), or wrong in one way each.
var slackSignModes = []string{
	"slack", "slack-stale", "slack-future", "slack-wrong-secret", "slack-other-body",
	"slack-not-hex", "slack-no-signature", "slack-no-timestamp", "slack-bad-timestamp",
}

// signSlack sets Slack's signature headers on h for body in mode.
func signSlack(h http.Header, mode, secret string, body []byte, now time.Time) {
	stamp := now.Unix()
	switch mode {
	case "slack-stale": // a captured request, replayed after the window
		stamp -= int64((slack.SignatureWindow + time.Minute) / time.Second)
	case "slack-future":
		stamp += int64((slack.SignatureWindow + time.Minute) / time.Second)
	}
	ts := strconv.FormatInt(stamp, 10)
	signature := slacktest.Sign(secret, ts, body)
	switch mode {
	case "slack-wrong-secret":
		signature = slacktest.Sign("not-the-signing-secret", ts, body)
	case "slack-other-body":
		signature = slacktest.Sign(secret, ts, append(slices.Clone(body), ' '))
	case "slack-not-hex":
		signature = "v0=not-hex"
	case "slack-bad-timestamp":
		ts = "yesterday"
	}
	if mode != "slack-no-timestamp" {
		h.Set(slack.HeaderTimestamp, ts)
	}
	if mode != "slack-no-signature" {
		h.Set(slack.HeaderSignature, signature)
	}
}
