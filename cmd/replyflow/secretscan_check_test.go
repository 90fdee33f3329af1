package main

import (
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters/slack"
)

func TestSecretScannerFindsEveryFormAndNamesTheTest(t *testing.T) {
	scan := newSecretScanner()
	scan.register("telegram bot token", "1234:AAbb-cc_dd/ee+ff")
	w := scanWriter{scanner: scan, owner: t.Name(), forward: &strings.Builder{}}
	text := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	asJSON := slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))

	text.Info("Telegram connected", "bot", "1234", "chat", "42")
	assert.Empty(t, scan.Hits(), "the bot ID alone is no secret")
	text.Debug("call", "url", "https://api.example/bot1234:AAbb-cc_dd%2Fee+ff/getMe")
	text.Warn("call", "query", "token=1234%3AAAbb-cc_dd%2Fee%2Bff")
	asJSON.Error("refused", "body", `{"t":"AAbb-cc_dd/ee+ff"}`)
	hits := scan.Hits()
	require.Len(t, hits, 3, "the path-escaped, the query-escaped and the JSON-quoted forms are each caught: %+v", hits)
	for _, h := range hits {
		assert.Equal(t, t.Name(), h.Owner)
		assert.Contains(t, h.Kind, "telegram bot token (its part after the colon)")
		assert.NotContains(t, h.Line, "AAbb-cc_dd", "a hit never keeps the secret")
	}
	assert.Equal(t, 4, scan.Lines(t.Name()))

	var report strings.Builder
	assert.True(t, scan.report(&report))
	assert.Contains(t, report.String(), "test "+t.Name()+": a telegram bot token")
	assert.NotContains(t, report.String(), "AAbb-cc_dd")

	keys := newSecretScanner()
	keys.register("codec keys", "k2:c2Vjb25kLWtleQ==,k1:Zmlyc3Qta2V5")
	keys.scan("x", []byte(`level=INFO msg="codec ready" keys="k2,k1"`))
	keys.scan("x", []byte(`level=ERROR msg=oops key=Zmlyc3Qta2V5`))
	require.Len(t, keys.Hits(), 1, "a list's entries are each a secret, their IDs are not")
	assert.Equal(t, "codec keys (an entry of its list) (its part after the colon)", keys.Hits()[0].Kind)

	clean := newSecretScanner()
	clean.register("slack signing secret", "quiet-secret")
	clean.scan("x", []byte("level=INFO msg=fine"))
	report.Reset()
	assert.False(t, clean.report(&report))
	assert.Contains(t, report.String(), "1 log lines of 1 loggers checked against 1 secrets, none found")
	assert.Panics(t, func() { clean.register("short", "abc") }, "a short secret would match ordinary words")
}

// A secret a test sets in the config is registered without being named,
// whatever platform or field holds it.
func TestConfigSecretsAreRegisteredByTheirFieldNames(t *testing.T) {
	cfg := testConfig(t).withOwnPlatforms()
	platformOf[*slack.Platform](cfg).SigningSecret = "sweep-signing-secret"
	registerConfigSecrets(cfg)
	logScan.mu.RLock()
	defer logScan.mu.RUnlock()
	assert.Equal(t, "slack SigningSecret", logScan.secrets["sweep-signing-secret"].kind)
	_, ok := logScan.secrets[webchatOf(cfg).BotToken]
	assert.True(t, ok, "the web chat's token is registered")
}

// The scan must be able to fail: a secret planted in a debug line, even
// URL-escaped, makes the run exit 1 naming who logged it and the kind,
// and the secret itself is nowhere in the output.
func TestSecretInALogLineFailsTheRun(t *testing.T) {
	cmd := exec.Command(testBinary(t), "-test.run=^$")
	cmd.Env = append(cmd.Environ(), plantSecretEnv+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the planted run must fail: %s", out)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, string(out), "secret scan: FAILED")
	assert.Contains(t, string(out), "test TestMain (planted): a planted signing secret")
	assert.NotContains(t, string(out), plantedSecret)
	assert.True(t, strings.Contains(string(out), "<planted signing secret>"), "the line is shown with the secret replaced: %s", out)
}

// testBinary is this test binary, to run again with other settings.
func testBinary(t *testing.T) string {
	bin, err := os.Executable()
	require.NoError(t, err)
	return bin
}
