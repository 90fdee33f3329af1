package harness

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
)

// Build compiles the replyflow binary into dir and returns its path.
func Build(dir string) (string, error) { return BuildAs(dir, "replyflow", "") }

// BuildAs compiles the replyflow binary into dir/name with the linker
// flags ldflags ("" for none): -X workflows/retiring.BuiltBefore=<change> makes a
// build that behaves as the release before that change.
func BuildAs(dir, name, ldflags string) (string, error) {
	bin := filepath.Join(dir, name)
	args := []string{"build", "-o", bin}
	if ldflags != "" {
		args = append(args, "-ldflags", ldflags)
	}
	out, err := exec.Command("go", append(args, "github.com/replyflow/replyflow/cmd/replyflow")...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build replyflow: %v\n%s", err, out)
	}
	return bin, nil
}

// Env is the environment of a replyflow process that talks to Temporal
// at address on taskQueue and, when fake is not nil, to that fake Bot
// API, with the web chat off, the demo model answering at once, and
// pacing and the gateway's inbound rate limits off: the rigs talk faster
// than people and in more chats at once, and kill gateways (after which
// every session looks new to the next one). extra overrides any of it
// (names without the REPLYFLOW_ prefix); SlackVars gives what a fake
// Slack needs.
func Env(address, taskQueue, storeDSN string, fake *telegramtest.Server, extra map[string]string) []string {
	vars := map[string]string{
		"TASK_QUEUE":               taskQueue,
		"STORE_DSN":                storeDSN,
		"WEBCHAT_ENABLED":          "false",
		"DEMO_MODEL_DELAY":         "0",
		"LOG_LEVEL":                "warn",
		"OWNERS":                   "*",
		"RATE_SENDER":              "off",
		"RATE_CHAT":                "off",
		"RATE_NEW_SESSIONS":        "off",
		"RATE_NEW_SESSIONS_GLOBAL": "off",
		// Encryption only when extra turns it on, as Dial's codecKeys,
		// never from the shell's REPLYFLOW_CODEC_KEYS.
		"CODEC_KEYS": "",
	}
	if fake != nil {
		maps.Copy(vars, TelegramVars(fake))
	}
	maps.Copy(vars, extra)
	env := []string{"TEMPORAL_ADDRESS=" + address, "TEMPORAL_NAMESPACE=default"}
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		env = append(env, "REPLYFLOW_"+k+"="+vars[k])
	}
	return env
}

// TelegramVars turn Telegram on against the fake Bot API, pacing off.
func TelegramVars(fake *telegramtest.Server) map[string]string {
	return map[string]string{
		"TELEGRAM_TOKEN":            fake.Token,
		"TELEGRAM_API_URL":          fake.URL(),
		"TELEGRAM_PACE":             "0",
		"TELEGRAM_GROUP_PER_MINUTE": "0",
	}
}

// Worker and Gateway are replyflow's two halves as processes.
func Worker(bin string, env []string, log string) *Proc {
	return NewProc("worker", bin, []string{"worker"}, env, log)
}

// Gateway serves HTTP on a free port (the Telegram webhook's; polling
// needs none, but the gateway always listens).
func Gateway(bin string, env []string, log string) (*Proc, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	return GatewayAt(bin, env, log, "127.0.0.1:"+strconv.Itoa(port)), nil
}

// GatewayAt is a gateway serving HTTP on addr (webhooks reach it there).
func GatewayAt(bin string, env []string, log, addr string) *Proc {
	env = append(append([]string(nil), env...), "REPLYFLOW_WEBCHAT_ADDR="+addr)
	return NewProc("gateway", bin, []string{"gateway"}, env, log)
}

// MustMkdirTemp is a fresh directory under the system's temp dir.
func MustMkdirTemp(prefix string) string {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		panic(err)
	}
	return dir
}
