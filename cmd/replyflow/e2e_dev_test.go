package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/cmd/internal/harness"
)

// `replyflow dev` killed hard and started again at once comes up and
// answers: its Temporal server died with it, or the new run stopped it,
// before the new server needed the ports and the database.
func TestDevKilledAndStartedAgainAtOnceAnswers(t *testing.T) {
	cli := os.Getenv("REPLYFLOW_TEST_TEMPORAL_CLI")
	if cli == "" {
		cli, _ = filepath.Abs("../../bin/temporal")
	}
	bin, err := harness.Build(t.TempDir())
	require.NoError(t, err)
	dir := t.TempDir()
	ports := make([]int, 4)
	for i := range ports {
		ports[i], err = harness.FreePort()
		require.NoError(t, err)
	}
	webchat := "127.0.0.1:" + strconv.Itoa(ports[2])
	env := []string{
		"REPLYFLOW_DEV_DIR=" + filepath.Join(dir, ".replyflow"),
		"REPLYFLOW_DEV_TEMPORAL_CLI=" + cli,
		"REPLYFLOW_DEV_TEMPORAL_PORT=" + strconv.Itoa(ports[0]),
		"REPLYFLOW_DEV_UI_PORT=" + strconv.Itoa(ports[1]),
		"REPLYFLOW_DEV_CODEC_PORT=" + strconv.Itoa(ports[3]),
		"REPLYFLOW_WEBCHAT_ADDR=" + webchat,
		"REPLYFLOW_WEBCHAT_URL=http://" + webchat,
		"REPLYFLOW_DEMO_MODEL_DELAY=0",
		"REPLYFLOW_OWNERS=*",
	}
	db := filepath.Join(dir, ".replyflow", "temporal.db")
	dev := harness.NewProc("replyflow dev", bin, []string{"dev"}, env, filepath.Join(dir, "dev.log"))
	require.NoError(t, dev.Start())
	t.Cleanup(dev.Stop)
	answered(t, dev, "http://"+webchat, "first")
	firstServer := serverOf(t, dev, db)
	codecURL := "http://127.0.0.1:" + strconv.Itoa(ports[3])
	assert.Contains(t, commandLine(firstServer), "--ui-codec-endpoint "+codecURL, "the dev UI decodes through replyflow dev's codec endpoint")
	keysFile := filepath.Join(dir, ".replyflow", "codec.keys")
	info, err := os.Stat(keysFile)
	require.NoError(t, err, "dev made a codec key")
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	firstKeys, err := os.ReadFile(keysFile)
	require.NoError(t, err)

	dev.Kill()
	require.NoError(t, dev.Start())
	serverOf(t, dev, db)
	assert.NotContains(t, commandLine(firstServer), db,
		"the killed run's Temporal server (pid %d) still held the database when the new run started its own", firstServer)
	answered(t, dev, "http://"+webchat, "second")
	keys, err := os.ReadFile(keysFile)
	require.NoError(t, err)
	assert.Equal(t, firstKeys, keys, "the key is kept between runs")
	assertDevDecodes(t, "127.0.0.1:"+strconv.Itoa(ports[0]), codecURL, "first", "second")
}

// assertDevDecodes reads the sessions of chats from the dev server with
// no codec, and decodes their payloads through the dev codec endpoint (no
// token: it is on loopback): both runs' messages come back.
func assertDevDecodes(t *testing.T, temporalAddr, codecURL string, chats ...string) {
	t.Helper()
	c, err := harness.Dial(context.Background(), temporalAddr, "")
	require.NoError(t, err)
	defer c.Close()
	for _, chat := range chats {
		history := sessionHistory(t, c, "session:webchat:"+chat)
		assert.NotContains(t, rawHistory(t, history), "are you there?", "dev encrypts")
		assert.Contains(t, decodeOverHTTP(t, codecURL+"/default/decode", "", payloadsIn(history), http.StatusOK), "are you there?",
			"the session of %s decodes with the kept key", chat)
	}
}

// serverOf waits for the Temporal server replyflow dev started on db and
// returns its pid (Linux: children are read from /proc).
func serverOf(t *testing.T, dev *harness.Proc, db string) int {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(dev.Pid()), "task", "*", "children"))
		for _, task := range tasks {
			data, _ := os.ReadFile(task)
			for _, field := range strings.Fields(string(data)) {
				if pid, _ := strconv.Atoi(field); strings.Contains(commandLine(pid), db) {
					return pid
				}
			}
		}
		require.True(t, dev.Running(), "replyflow dev exited:\n%s", dev.Tail())
		require.True(t, time.Now().Before(deadline), "replyflow dev started no Temporal server on %s:\n%s", db, dev.Tail())
		time.Sleep(10 * time.Millisecond)
	}
}

// answered sends a message in a new chat and waits for its reply, failing
// if replyflow dev exits or no reply comes within two minutes.
func answered(t *testing.T, dev *harness.Proc, baseURL, chat string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := &http.Client{Timeout: 10 * time.Second}
	for {
		resp, err := client.Get(baseURL + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		require.True(t, dev.Running(), "replyflow dev exited:\n%s", dev.Tail())
		select {
		case <-ctx.Done():
			t.Fatalf("the web chat never answered: %v\n%s", err, dev.Tail())
		case <-time.After(100 * time.Millisecond):
		}
	}
	events := subscribe(t, baseURL, chat)
	resp, err := client.Post(baseURL+"/api/chats/"+chat+"/messages", "application/json",
		strings.NewReader(`{"message_id":"m1","sender_id":"alice","text":"are you there?"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode, dev.Tail())
	events.collectUntil(t, 2*time.Minute, isReplyTo("m1"))
}
