package harness

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
)

// Build compiles the replyflow binary of this working tree into
// dir/replyflow and returns its path.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "replyflow")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/replyflow/replyflow/cmd/replyflow").CombinedOutput()
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

// TelegramVars turn Telegram on against the fake Bot API, pacing off:
// per chat, per group and per bot (the rigs drive one bot in more chats
// at once than Telegram would let it answer; the bench's crowd measures
// the pacing on its own, with the fake's limits enforced).
func TelegramVars(fake *telegramtest.Server) map[string]string {
	return map[string]string{
		"TELEGRAM_TOKEN":            fake.Token,
		"TELEGRAM_API_URL":          fake.URL(),
		"TELEGRAM_PACE":             "0",
		"TELEGRAM_GROUP_PER_MINUTE": "0",
		"TELEGRAM_BOT_PER_SECOND":   "0",
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

// BuildRev compiles the replyflow binary of the git revision rev (a
// commit, a tag, "HEAD~1") of the repository the current directory is
// in, into dir/name. The revision's files are exported with git archive
// into a folder of dir, so the working tree, its index and its worktrees
// are left as they are; the module cache serves its dependencies.
func BuildRev(dir, name, rev string) (string, error) {
	commit, err := exec.Command("git", "rev-parse", "--verify", "--quiet", rev+"^{commit}").Output()
	if err != nil {
		return "", fmt.Errorf("build replyflow at %q: not a commit of this repository (git rev-parse: %v)", rev, err)
	}
	src, tarball := filepath.Join(dir, name+"-src"), filepath.Join(dir, name+"-src.tar")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	for _, step := range [][]string{
		{"git", "archive", "--format=tar", "-o", tarball, strings.TrimSpace(string(commit))},
		{"tar", "-x", "-f", tarball, "-C", src},
	} {
		if out, err := exec.Command(step[0], step[1:]...).CombinedOutput(); err != nil {
			return "", fmt.Errorf("build replyflow at %s: %s: %v: %s", rev, step[0], err, out)
		}
	}
	bin := filepath.Join(dir, name)
	build := exec.Command("go", "build", "-o", bin, "./cmd/replyflow")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build replyflow at %s: %v\n%s", rev, err, out)
	}
	return bin, nil
}
