// Command replyflow runs the replyflow gateway, worker, or both with a local
// Temporal dev server (`replyflow dev`). It reads configuration and wires
// packages together; it holds no business rules.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	// The time zone database in the binary: heartbeat time zones and
	// REPLYFLOW_TIMEZONE resolve on hosts without one (scratch images).
	_ "time/tzdata"

	"github.com/replyflow/replyflow/workers/telemetry"
)

const usage = `replyflow: a durable auto-reply gateway on Temporal

Usage:
  replyflow dev       run everything on this machine: a Temporal dev server
                      (Web UI on :8233), the worker and the gateway (web chat on :8080)
  replyflow worker    run the Temporal worker against TEMPORAL_ADDRESS
  replyflow gateway   run the platform connections against TEMPORAL_ADDRESS
  replyflow sessions [--stuck] [--stuck-after 10m] [--state S] [--channel X] [--chat C] [--all]
                      list sessions from Temporal visibility
  replyflow inspect [--json] <session>
                      show one session's state (its "state" query)
  replyflow retry [--by name] [--reason text] <session>
                      resume a parked delivery (only the chunks not yet delivered)
  replyflow reload [--by name] [--reason text] <session>... | --all [--rate 50]
                      make sessions read their settings again before their next
                      message (--all: every open session of REPLYFLOW_TASK_QUEUE)
  replyflow releases [--move-on [--by name] [--reason text] [--rate 50]]
                      the session workflow's releases with their open runs, and
                      what a retired one's deletion takes (docs/upgrading.md);
                      --move-on asks the runs that still read a retiring
                      release's state to continue as new at their next quiet point
  replyflow approve|reject [--reason text] <session> <proposal>
                      decide a pending proposal
  replyflow heartbeat list | set <session> every 30m [08:00-22:00] [time zone]
  replyflow heartbeat pause|resume [--reason text] <session> | trigger|off <session>
                      a chat's heartbeat: its Temporal Schedule heartbeat:<channel>:<chat>
                      (also on the Temporal UI's Schedules page)
  replyflow status [--ready URL]...
                      is Temporal reachable, are the gateway and the worker ready
                      (their /readyz: REPLYFLOW_WEBCHAT_ADDR, REPLYFLOW_METRICS_ADDR)
  replyflow export [--out file] <session>
                      print the session's transcript as Markdown, as /export sends it
                      (reads the store, REPLYFLOW_STORE_DSN; needs no Temporal)
  replyflow budget list [--day D] [--all] | raise [<chat> | --sender <channel>:<id> | --deployment] (--tokens N | --usd X)
                      who is over a spend budget today, the breakers in force and
                      their trips; raise a budget for the day (reads the store,
                      REPLYFLOW_STORE_DSN; needs no Temporal)
  replyflow webchat token <sender> [--owner] [--name N] [--chat C]... | [--all-chats] [--ttl 720h]
                      print a web chat sign-in for sender: a Bearer token and a
                      one-time login link (needs REPLYFLOW_WEBCHAT_AUTH_KEY, not Temporal);
                      it reaches the chats --chat names, else only the chat whose ID
                      is the sender ID; --all-chats reaches every chat (trusted front ends)
  replyflow codec-server [--listen 127.0.0.1:8089] [--ui-origin URL]...
                      decrypt payloads for the Temporal UI and CLI (a codec server;
                      REPLYFLOW_CODEC_KEYS, and REPLYFLOW_CODEC_TOKEN off loopback)
  replyflow help      show this text

Configuration is read from REPLYFLOW_* and TEMPORAL_* environment variables;
docs/configuration.md lists them all.
`

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "replyflow:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Print(usage)
		return nil
	}
	cfg, err := loadConfig()
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	logger := newLogger(cfg)
	slog.SetDefault(logger)
	// SIGHUP too: a closed terminal stops `replyflow dev` in order rather
	// than killing it under its server.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()

	if cfg.MetricsAddr != "" && (args[0] == "dev" || args[0] == "worker" || args[0] == "gateway") {
		stopTelemetry, err := startTelemetry(&cfg, logger)
		if err != nil {
			return err
		}
		defer stopTelemetry()
	}
	if telemetry.TracingConfigured() && (args[0] == "dev" || args[0] == "worker" || args[0] == "gateway") {
		ic, shutdown, err := telemetry.Tracing(ctx, "replyflow-"+args[0])
		if err != nil {
			return err
		}
		defer func() {
			flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = shutdown(flushCtx)
		}()
		cfg.tracing = ic
		logger.Info("Tracing on: spans go to the OTLP endpoint of OTEL_EXPORTER_OTLP_*")
	}
	switch args[0] {
	case "dev":
		return runDev(ctx, cfg, logger)
	case "worker":
		return workerCommand(ctx, cfg, logger)
	case "gateway":
		return gatewayCommand(ctx, cfg, logger)
	case "sessions":
		return sessionsCommand(ctx, cfg, args[1:], os.Stdout, quietLogger(cfg))
	case "inspect":
		return inspectCommand(ctx, cfg, args[1:], os.Stdout, quietLogger(cfg))
	case "retry":
		return retryCommand(ctx, cfg, args[1:], os.Stdout, quietLogger(cfg))
	case "reload":
		return reloadCommand(ctx, cfg, args[1:], os.Stdout, quietLogger(cfg))
	case "codec-server":
		return codecServerCommand(ctx, cfg, args[1:], logger)
	case "heartbeat":
		return heartbeatCommand(ctx, cfg, args[1:], os.Stdout, quietLogger(cfg))
	case "approve", "reject":
		return decideCommand(ctx, cfg, args[0], args[1:], os.Stdout, quietLogger(cfg))
	case "webchat":
		return webchatCommand(args[1:], cfg, os.Stdout, os.Stderr, time.Now())
	case "export":
		return exportCommand(ctx, cfg, args[1:], os.Stdout, time.Now())
	case "budget":
		return budgetCommand(ctx, cfg, args[1:], os.Stdout, time.Now())
	case "status":
		return statusCommand(ctx, cfg, args[1:], os.Stdout, quietLogger(cfg))
	case "releases":
		return releasesCommand(ctx, cfg, args[1:], os.Stdout, quietLogger(cfg))
	}
	return fmt.Errorf("unknown command %q; run `replyflow help`", args[0])
}

func workerCommand(ctx context.Context, cfg Config, logger *slog.Logger) error {
	acts, db, code, err := workerSide(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer db.Close()
	if code != "" {
		fmt.Fprintf(os.Stderr, "No owner yet: send %s in a chat within %s to become the owner; it works once (REPLYFLOW_OWNERS sets owners instead).\n", code, cfg.ClaimTTL)
	}
	c, err := dialTemporal(ctx, cfg, "", logger)
	if err != nil {
		return err
	}
	defer c.Close()
	warnIfClearText(cfg, logger)
	logger.Info("Worker running", "task_queue", cfg.TaskQueue, "models", strings.Join(cfg.models(), ","))
	return runWorker(ctx, c, cfg, acts)
}

func gatewayCommand(ctx context.Context, cfg Config, logger *slog.Logger) error {
	c, err := dialTemporal(ctx, cfg, "", logger)
	if err != nil {
		return err
	}
	defer c.Close()
	warnIfClearText(cfg, logger)
	ln, err := net.Listen("tcp", cfg.WebchatAddr)
	if err != nil {
		return fmt.Errorf("listen for the web chat and webhooks on %s (REPLYFLOW_WEBCHAT_ADDR): %w", cfg.WebchatAddr, err)
	}
	attrs := []any{"http", "http://" + ln.Addr().String()}
	for _, p := range cfg.Platforms {
		attrs = append(attrs, p.Channel(), p.Enabled())
	}
	logger.Info("Gateway running", attrs...)
	if cfg.tel != nil {
		// The task queue it starts sessions on: a queue no worker polls
		// (a REPLYFLOW_TASK_QUEUE that differs from the workers') shows here.
		gaugesCtx, stopGauges := context.WithCancel(ctx)
		defer readGauges(gaugesCtx, c, cfg, false, logger)()
		defer stopGauges()
	}
	return serveGateway(ctx, ln, c, cfg, logger)
}

func newLogger(cfg Config) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if strings.EqualFold(cfg.LogFormat, "json") {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}

// quietLogger keeps the Temporal client's routine messages out of an
// operator verb's output.
func quietLogger(cfg Config) *slog.Logger {
	if strings.EqualFold(cfg.LogLevel, "debug") {
		return newLogger(cfg)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// firstError returns the first non-nil error that is not a clean stop.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return nil
}
