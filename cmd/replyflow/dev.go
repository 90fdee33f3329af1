package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/adapters/webchat"
	"github.com/replyflow/replyflow/cmd/internal/devserver"
	"github.com/replyflow/replyflow/gateway"
	"github.com/replyflow/replyflow/workers"
)

// runDev runs the laptop bundle: a Temporal dev server on a persistent
// SQLite file with replyflow's search attributes, the worker and the
// gateway, until Ctrl-C; then it stops the worker (letting running
// activities finish), the gateway and the server, in that order.
func runDev(ctx context.Context, cfg Config, logger *slog.Logger) error {
	cfg = cfg.withOwnPlatforms()
	for _, p := range cfg.Platforms {
		if chat, ok := p.(*webchat.Platform); ok && chat.BotToken == "" {
			// Worker and gateway share this process, so a fresh secret will do.
			chat.BotToken = randomToken()
		}
	}
	if err := os.MkdirAll(cfg.DevDir, 0o755); err != nil {
		return fmt.Errorf("create %s (REPLYFLOW_DEV_DIR): %w", cfg.DevDir, err)
	}
	lock, err := lockDevDir(cfg.DevDir, devLockWait, logger)
	if err != nil {
		return err
	}
	defer lock.release()
	cfg, keysFrom, err := devCodecKeys(cfg)
	if err != nil {
		return err
	}
	if os.Getenv("REPLYFLOW_STORE_DSN") == "" {
		cfg.StoreDSN = filepath.Join(cfg.DevDir, "replyflow.db")
	}
	if _, set := os.LookupEnv("REPLYFLOW_PROMOTE"); !set {
		// The laptop's one worker is every build there is: each new build
		// takes over the open sessions as it starts.
		cfg.Promote = string(workers.PromoteAlways)
	}
	acts, db, code, err := workerSide(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer db.Close()
	ln, err := net.Listen("tcp", cfg.WebchatAddr)
	if err != nil {
		return fmt.Errorf("listen for the web chat on %s (set REPLYFLOW_WEBCHAT_ADDR to another port): %w", cfg.WebchatAddr, err)
	}
	devWebchatAuth(cfg, ln.Addr())
	if err := checkWebchatListener(cfg, ln.Addr()); err != nil {
		ln.Close()
		return err
	}
	codecEndpoint, stopCodec, err := startDevCodec(cfg, logger)
	if err != nil {
		ln.Close()
		return err
	}
	defer stopCodec()
	server, err := startDevServer(cfg, "--ui-codec-endpoint", codecEndpoint)
	if err != nil {
		ln.Close()
		return err
	}
	defer server.stop(logger)
	if err := lock.recordServer(server.cmd.Process.Pid); err != nil {
		ln.Close()
		return err
	}

	hostPort := net.JoinHostPort(cfg.DevTemporalIP, strconv.Itoa(cfg.DevPort))
	c, err := waitForTemporal(ctx, cfg, hostPort, server, logger)
	if err != nil {
		ln.Close()
		return err
	}
	defer c.Close()

	// Ctrl-C (or a half that fails) stops the worker first: while it lets
	// running activities finish, the gateway is still there to take the
	// web chat replies they deliver. The gateway stops once the worker has.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	gatewayCtx, stopGateway := context.WithCancel(context.WithoutCancel(ctx))
	defer stopGateway()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		errs[0] = runWorker(runCtx, c, cfg, acts)
		cancel()
		stopGateway()
	}()
	go func() {
		defer wg.Done()
		errs[1] = serveGateway(gatewayCtx, ln, c, cfg, logger)
		cancel()
	}()
	printBanner(cfg, ln.Addr().String(), strings.Join(cfg.models(), " → "), code,
		fmt.Sprintf("  Codec        %s: the UI decrypts payloads through it (no token: loopback only)", codecEndpoint),
		fmt.Sprintf("  Keys         %s (payloads in Temporal are encrypted with them)", keysFrom))
	select {
	case <-runCtx.Done():
	case <-server.exited:
		cancel()
		errs = append(errs, fmt.Errorf("the Temporal dev server exited; see %s", server.logPath))
	}
	wg.Wait()
	fmt.Println("\nreplyflow dev stopped; sessions are kept in", cfg.DevDir)
	return firstError(errs...)
}

func printBanner(cfg Config, webchatAddr, model, claim string, lines ...string) {
	fmt.Printf(`
replyflow dev is running (Ctrl-C stops everything)

  Web chat     http://%s%s
  Temporal UI  http://%s:%d/namespaces/default/workflows
  Temporal     %s:%d (namespace default, task queue %s)
  Data         %s (kept between runs)
`, webchatAddr, indentedLine(webchatSignIn(cfg)), cfg.DevTemporalIP, cfg.DevUIPort, cfg.DevTemporalIP, cfg.DevPort, cfg.TaskQueue, cfg.DevDir)
	if model == models.DemoName {
		fmt.Println("\n  Model        demo/echo: the offline demo model is in use (set REPLYFLOW_MODEL for a real one)")
	} else {
		fmt.Printf("\n  Model        %s\n", model)
	}
	for _, p := range gateway.Enabled(cfg.Platforms) {
		if summary := p.Summary(); summary != "" {
			fmt.Printf("  %-12s %s\n", titled(p.Channel()), summary)
		}
	}
	if claim != "" {
		fmt.Printf("  Claim        send %s in a chat within %s to become the owner (once)\n", claim, cfg.ClaimTTL)
	}
	for _, line := range lines {
		fmt.Println(line)
	}
	fmt.Println()
}

// devServer is the Temporal CLI's dev server, run as a child process.
type devServer struct {
	cmd     *exec.Cmd
	logPath string
	// logStart is where this run's output begins in the log.
	logStart int64
	dbFile   string
	exited   chan struct{}
}

func startDevServer(cfg Config, extraArgs ...string) (*devServer, error) {
	cli, err := exec.LookPath(cfg.DevTemporalCLI)
	if err != nil {
		return nil, fmt.Errorf("the Temporal CLI was not found at %s: run `make dev`, which builds it into ./bin, or set REPLYFLOW_DEV_TEMPORAL_CLI", cfg.DevTemporalCLI)
	}
	dbFile := filepath.Join(cfg.DevDir, "temporal.db")
	args := []string{"server", "start-dev",
		"--ip", cfg.DevTemporalIP,
		"--port", strconv.Itoa(cfg.DevPort),
		"--ui-port", strconv.Itoa(cfg.DevUIPort),
		"--db-filename", dbFile,
		"--log-level", "warn",
	}
	args = append(args, devserver.Args()...)
	args = append(args, extraArgs...)
	logPath := filepath.Join(cfg.DevDir, "temporal.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	logStart, _ := logFile.Seek(0, io.SeekEnd)
	cmd := exec.Command(cli, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group, so Ctrl-C reaches replyflow first and the
	// server is stopped after the worker and gateway, not before them.
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start the Temporal dev server (%s): %w", cli, err)
	}
	s := &devServer{cmd: cmd, logPath: logPath, logStart: logStart, dbFile: dbFile, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(s.exited)
	}()
	return s, nil
}

func (s *devServer) stop(logger *slog.Logger) {
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		logger.Warn("Temporal dev server did not stop in 15s; killing it")
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

func waitForTemporal(ctx context.Context, cfg Config, hostPort string, server *devServer, logger *slog.Logger) (client.Client, error) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		dialCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		c, err := dialTemporal(dialCtx, cfg, hostPort, logger.With("component", "temporal-client"))
		cancel()
		if err == nil {
			return c, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-server.exited:
			return nil, server.startFailure(hostPort)
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, errors.Join(fmt.Errorf("the Temporal dev server did not answer on %s within 60s; see %s", hostPort, server.logPath), err)
		}
	}
}

// indentedLine is text as a banner line of its own under the last
// label's value; nothing for no text.
func indentedLine(text string) string {
	if text == "" {
		return ""
	}
	return "\n               " + text
}

// titled is a channel's name as a banner's label: telegram, Telegram.
func titled(channel string) string {
	if channel == "" {
		return ""
	}
	return strings.ToUpper(channel[:1]) + channel[1:]
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// startFailure names why the server exited at start, from what it logged:
// its database held by another process, or a port in use.
func (s *devServer) startFailure(hostPort string) error {
	out := s.logSinceStart()
	lower := strings.ToLower(out)
	switch {
	case strings.Contains(lower, "database is locked"), strings.Contains(lower, "sqlite_busy"),
		strings.Contains(lower, "within a transaction"):
		return fmt.Errorf("the Temporal dev server could not use its database %s: another process holds it (a server from an earlier run? `fuser %s` names it; stop it and start again); see %s",
			s.dbFile, s.dbFile, s.logPath)
	case strings.Contains(lower, "address already in use"):
		return fmt.Errorf("the Temporal dev server could not listen: a port is in use by another program (frontend %s, or the UI's): stop it, or set REPLYFLOW_DEV_TEMPORAL_PORT and REPLYFLOW_DEV_UI_PORT; see %s",
			hostPort, s.logPath)
	}
	return fmt.Errorf("the Temporal dev server exited at start; see %s", s.logPath)
}

// logSinceStart is what the server wrote in this run (its last 64 KiB).
func (s *devServer) logSinceStart() string {
	f, err := os.Open(s.logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return ""
	}
	from := max(s.logStart, end-64<<10)
	data, _ := io.ReadAll(io.NewSectionReader(f, from, end-from))
	return string(data)
}
