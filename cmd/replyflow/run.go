package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/client"
	temporalenv "go.temporal.io/sdk/contrib/envconfig"
	tlog "go.temporal.io/sdk/log"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/gateway"
	"github.com/replyflow/replyflow/workers"
	"github.com/replyflow/replyflow/workers/telemetry"
)

// dialTemporal connects with the options every Temporal tool reads:
// TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TLS variables and
// profiles from TEMPORAL_CONFIG_FILE. hostPort, when set, wins (replyflow dev
// points at the server it started). With cfg's codec keys, every payload
// and failure the client (and a worker built on it) sends is encrypted.
func dialTemporal(ctx context.Context, cfg Config, hostPort string, logger *slog.Logger) (client.Client, error) {
	opts, err := temporalenv.LoadDefaultClientOptions()
	if err != nil {
		return nil, fmt.Errorf("read the Temporal connection settings (TEMPORAL_* variables, profile): %w", err)
	}
	if hostPort != "" {
		opts.HostPort = hostPort
	}
	opts.Logger = tlog.NewStructuredLogger(logger)
	if cfg.tel != nil {
		opts.MetricsHandler = cfg.tel.MetricsHandler()
	}
	if cfg.tracing != nil {
		opts.Interceptors = append(opts.Interceptors, cfg.tracing)
	}
	if err := cfg.applyCodec(&opts); err != nil {
		return nil, err
	}
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		addr := opts.HostPort
		if addr == "" {
			addr = client.DefaultHostPort
		}
		return nil, fmt.Errorf("connect to Temporal at %s (set TEMPORAL_ADDRESS, or run `make dev` for a local server): %w", addr, err)
	}
	return c, nil
}

// temporalNamespace is the namespace dialTemporal's client works in.
func temporalNamespace() string {
	opts, err := temporalenv.LoadDefaultClientOptions()
	if err != nil || opts.Namespace == "" {
		return client.DefaultNamespace
	}
	return opts.Namespace
}

// newActivities opens the store and wires the models and every enabled
// platform's outbound side from the config. The caller closes the store.
func newActivities(ctx context.Context, cfg Config, logger *slog.Logger) (*activities.Activities, *store.Store, error) {
	db, err := store.Open(ctx, cfg.StoreDSN)
	if err != nil {
		return nil, nil, err
	}
	db.SetRetention(cfg.retention())
	db.SetMediaLimits(cfg.mediaLimits())
	if err := cfg.sealStore(db); err != nil {
		db.Close()
		return nil, nil, err
	}
	acts, err := buildActivities(ctx, cfg, db, logger)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	acts.Store = db
	acts.Spend = cfg.spend(db)
	return acts, db, nil
}

func buildActivities(ctx context.Context, cfg Config, ids adapters.IDMap, logger *slog.Logger) (*activities.Activities, error) {
	var system string
	if cfg.SystemPromptFile != "" {
		data, err := os.ReadFile(cfg.SystemPromptFile)
		if err != nil {
			return nil, fmt.Errorf("read the system prompt (REPLYFLOW_SYSTEM_PROMPT_FILE): %w", err)
		}
		system = strings.TrimSpace(string(data))
	}
	tools, err := activities.LoadTools(cfg.ToolsFile)
	if err != nil {
		return nil, err
	}
	side := adapters.WorkerSide{IDs: ids, Logger: logger}
	if uploads, ok := ids.(adapters.UploadReader); ok {
		// The store: the web chat's files are read from it.
		side.Uploads = uploads
	}
	outbound, err := gateway.Outbound(cfg.Platforms, side)
	if err != nil {
		return nil, err
	}
	servers, err := activities.LoadMCP(cfg.MCPFile, logger)
	if err != nil {
		return nil, err
	}
	// Each worker holds its own connections, listed before it takes a
	// turn; runWorker closes them when it stops.
	servers.Start(ctx)
	tools.WithMCP(servers)
	return &activities.Activities{
		Settings:        cfg.settings(),
		Models:          &models.Registry{MaxTokens: cfg.MaxTokens, DemoDelay: cfg.DemoModelDelay},
		SystemPrompt:    system,
		Tools:           tools,
		ContextTokens:   cfg.ContextTokens,
		Location:        location(cfg.Timezone),
		Outbound:        outbound,
		TypingInterval:  cfg.TypingInterval,
		TypingByChannel: gateway.TypingIntervals(cfg.Platforms, cfg.TypingByChannel),
		Chunkers:        gateway.Chunkers(cfg.Platforms),
		ThinkingAfter:   cfg.ReactionCoalesce,
		StaleAfter:      cfg.StaleAfter,
		Links:           cfg.links(),
		Streaming:       cfg.streaming(),
		ChannelSettings: cfg.channelSettings,
		Media:           cfg.media(),
		Voice:           cfg.voice(),
		Logger:          logger,
	}, nil
}

// workerSide opens what a worker needs (activities and their store) and,
// when the agent has no owner yet, a claim code to print; the caller closes
// the store.
func workerSide(ctx context.Context, cfg Config, logger *slog.Logger) (*activities.Activities, *store.Store, string, error) {
	acts, db, err := newActivities(ctx, cfg, logger)
	if err != nil {
		return nil, nil, "", err
	}
	code, err := claimCode(ctx, cfg, db)
	if err != nil {
		db.Close()
		return nil, nil, "", err
	}
	return acts, db, code, nil
}

// claimCode makes a one-time claim code, valid for REPLYFLOW_CLAIM_TTL,
// when the agent has no owner yet, neither configured nor claimed; ""
// otherwise. A start with owners revokes the unused codes that earlier
// starts without owners printed.
func claimCode(ctx context.Context, cfg Config, db *store.Store) (string, error) {
	if len(cfg.Owners) > 0 {
		return "", db.RevokeClaimCodes(ctx)
	}
	owners, err := db.Owners(ctx)
	if err != nil || len(owners) > 0 {
		return "", err
	}
	return db.NewClaimCode(ctx, cfg.ClaimTTL)
}

func location(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC
	}
	return loc
}

// runWorker serves session workflows and activities until ctx is done,
// then stops polling and lets the running activities finish for up to
// REPLYFLOW_SHUTDOWN_GRACE before it returns.
func runWorker(ctx context.Context, c client.Client, cfg Config, acts *activities.Activities) error {
	// Last, once the worker has stopped and its tool calls have ended.
	defer acts.Tools.Close()
	if err := workers.CheckSearchAttributes(ctx, c.OperatorService(), temporalNamespace(), acts.Logger); err != nil {
		return err
	}
	if err := workers.CheckServedTypes(ctx, c, cfg.TaskQueue, workers.ServedWorkflowTypes(), acts.Logger); err != nil {
		return err
	}
	// The sessions of a worker that was killed move on as soon as their
	// next task comes, to whichever worker polls: released first, as
	// the lost model attempts time out within seconds of a crash.
	unstickCtx, stopUnstick := context.WithCancel(ctx)
	unstuck := make(chan struct{})
	go func() {
		defer close(unstuck)
		if cfg.ReleaseSessionsOnStart {
			workers.UnstickAfterStart(unstickCtx, workers.ClientSticky{Client: c, Namespace: temporalNamespace()}, cfg.TaskQueue, acts.Logger)
		}
	}()
	defer func() { stopUnstick(); <-unstuck }()
	if acts.Heartbeats == nil {
		acts.Heartbeats = newHeartbeats(c, cfg, acts.Logger)
	}
	deployment, err := cfg.deployment()
	if err != nil {
		return err
	}
	workers.SetWorkflowCacheSize(cfg.WorkflowCacheSize)
	w := workers.New(c, cfg.TaskQueue, acts, cfg.ShutdownGrace, deployment)
	if err := w.Start(); err != nil {
		return fmt.Errorf("start the worker on task queue %q as %s: %w", cfg.TaskQueue, deployment, err)
	}
	acts.Logger.Info("Worker started", "task_queue", cfg.TaskQueue, "version", deployment.String())
	promoted := make(chan struct{})
	go func() {
		defer close(promoted)
		workers.PromoteWhenRegistered(ctx, c, deployment, acts.Logger)
	}()
	defer func() { <-promoted }()
	// Open sessions that loaded other settings read these again.
	reloaded := reloadWhenChanged(ctx, c, cfg, acts)
	defer reloaded()
	if cfg.tel != nil {
		cfg.tel.AddCheck("temporal", telemetry.TemporalCheck(c))
		var stopping atomic.Bool
		defer stopping.Store(true)
		cfg.tel.AddCheck("worker "+cfg.TaskQueue, func(context.Context) error {
			if stopping.Load() {
				return errors.New("the worker is stopping")
			}
			return nil
		})
		if deployment.Versioned() {
			cfg.tel.AddCheck("version "+deployment.String(), workers.TakesSessions(c, deployment))
		}
		started(cfg.tel)
		defer readGauges(ctx, c, cfg, true, acts.Logger)()
	}
	<-ctx.Done()
	stopWorker(w, cfg, acts.Logger)
	return nil
}

// readGauges exports what stands now (parked sessions, pending
// proposals, the task queue's pollers) from Temporal to cfg.tel until ctx
// is done; sessions false reads the pollers only. The returned function
// waits for it to end.
func readGauges(ctx context.Context, c client.Client, cfg Config, sessions bool, logger *slog.Logger) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		workers.Gauges{Client: c, TaskQueue: cfg.TaskQueue, Metrics: cfg.tel.MetricsHandler(), Sessions: sessions, Logger: logger}.Run(ctx)
	}()
	return func() { <-done }
}

// newHeartbeats are the heartbeat schedules' activities on c: ticks run
// on the sessions' task queue and reach a session the way the gateway's
// messages do.
func newHeartbeats(c client.Client, cfg Config, logger *slog.Logger) *activities.Heartbeats {
	return &activities.Heartbeats{
		Schedules:     c.ScheduleClient(),
		TaskQueue:     cfg.TaskQueue,
		Sessions:      &gateway.Ingress{Client: c, TaskQueue: cfg.TaskQueue},
		ChecklistFile: cfg.HeartbeatFile,
		Logger:        logger,
	}
}

// stopWorker stops w, saying what it waits for and what it had to cancel.
func stopWorker(w *workers.Worker, cfg Config, logger *slog.Logger) {
	if running := w.Running(); len(running) > 0 {
		logger.Info("Worker stopping: no new tasks are taken; waiting for the running activities",
			"running", len(running), "activities", firstOf(running, 20), "grace", cfg.ShutdownGrace, "task_queue", cfg.TaskQueue)
	} else {
		logger.Info("Worker stopping: no new tasks are taken, and no activity is running", "task_queue", cfg.TaskQueue)
	}
	w.Stop()
	if left := w.Running(); len(left) > 0 {
		logger.Warn("Worker stopped before these activities finished; they were cancelled and Temporal retries them (raise REPLYFLOW_SHUTDOWN_GRACE, and the grace your service manager gives the process, if this happens at every deploy)",
			"cancelled", len(left), "activities", firstOf(left, 20), "grace", cfg.ShutdownGrace, "task_queue", cfg.TaskQueue)
		return
	}
	logger.Info("Worker stopped; every activity it ran has finished", "task_queue", cfg.TaskQueue)
}

// firstOf keeps a log line short: at most n names, then how many more.
func firstOf(names []string, n int) []string {
	if len(names) <= n {
		return names
	}
	return append(names[:n:n], fmt.Sprintf("and %d more", len(names)-n))
}

// serveGateway serves the enabled platforms until ctx is done, handing
// every inbound message to Temporal through the gateway's inbound chain:
// their routes (the web chat, webhooks) on ln beside GET /healthz, their
// own connections (long polling) in the background. It stops early when a
// platform fails for good.
func serveGateway(ctx context.Context, ln net.Listener, c client.Client, cfg Config, logger *slog.Logger) error {
	if err := checkWebchatListener(cfg, ln.Addr()); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	chain := gateway.ChainConfig{Client: c, TaskQueue: cfg.TaskQueue, Scope: cfg.sessionScope, Limits: cfg.limits(), Logger: logger}
	if cfg.tel != nil {
		chain.Metrics = cfg.tel.MetricsHandler()
	}
	var db *store.Store
	if chat := webchatSettings(cfg); cfg.Media || (chat != nil && chat.On) {
		// The web chat keeps what each chat shows in the store, so a page
		// reloaded after a restart, or served by another gateway, shows it;
		// with REPLYFLOW_MEDIA, the files of messages are recorded there
		// for the worker to fetch.
		var err error
		if db, err = store.Open(ctx, cfg.StoreDSN); err != nil {
			return fmt.Errorf("the gateway keeps the web chat's history and the files of messages (REPLYFLOW_MEDIA) in the store: %w", err)
		}
		defer db.Close()
		db.SetRetention(cfg.retention())
		db.SetMediaLimits(cfg.mediaLimits())
		if err := cfg.sealStore(db); err != nil {
			return err
		}
		if cfg.Media {
			chain.Media = db
		}
	}
	inbound := gateway.NewChain(chain)
	defer inbound.Wait() // the slow-down notices in flight, a few seconds at most
	status := gateway.NewStatus()
	detail := operatorDetail(cfg)
	ready, err := gatewayReadiness(c, cfg.tel, status.Ready, inbound.Ready, detail)
	if err != nil {
		return err
	}
	side := adapters.GatewaySide{
		Mux: http.NewServeMux(), Sink: inbound, Feedback: inbound, Health: status, Logger: logger, WriteTimeout: cfg.HTTPTimeout,
		Sessions: &gateway.Sessions{Client: c},
	}
	if chat := webchatSettings(cfg); chat != nil && chat.On {
		side.ChatLog = db
		if cfg.Media {
			side.Uploads, side.MaxFileBytes = db, cfg.MediaMaxBytes
		}
	}
	side.Mux.Handle("GET /healthz", status.Public(detail))
	side.Mux.Handle("GET /readyz", ready)
	listeners, muxes := []net.Listener{ln}, []*http.ServeMux{side.Mux}
	if cfg.WebhookAddr != "" {
		hooksLn, err := net.Listen("tcp", cfg.WebhookAddr)
		if err != nil {
			return fmt.Errorf("listen for webhooks on %s (REPLYFLOW_WEBHOOK_ADDR): %w", cfg.WebhookAddr, err)
		}
		side.Webhooks = http.NewServeMux()
		side.Webhooks.Handle("GET /healthz", status.Public(detail))
		listeners, muxes = append(listeners, hooksLn), append(muxes, side.Webhooks)
		logger.Info("Webhooks served on their own address", "addr", hooksLn.Addr().String())
	}
	platforms, err := gateway.Serve(ctx, cfg.Platforms, side)
	if err != nil {
		for _, l := range listeners[1:] {
			_ = l.Close()
		}
		return err
	}
	inbound.NotifyThrough(platforms)
	servers, stopped := serveHTTP(listeners, muxes, cfg.HTTPTimeout)
	var failure error
	select {
	case err := <-stopped:
		failure = err
	case err := <-platforms.Failed:
		failure = err
	case <-ctx.Done():
	}
	// New events are refused from here (the platforms deliver them
	// again), while the signals in flight finish below.
	inbound.Close()
	cancel()
	// The requests in flight (a webhook whose signal is being handed to
	// Temporal) finish, for up to the grace; new ones are refused.
	shutdownCtx, cancelShutdown := context.WithTimeout(context.Background(), max(cfg.ShutdownGrace, time.Second))
	defer cancelShutdown()
	platforms.Close()
	shutdownHTTP(shutdownCtx, servers)
	return failure
}

// gatewayReadiness answers the gateway's GET /readyz: ready while
// Temporal answers, every platform is up and the gateway is not
// stopping, and why not only to a request detail approves. Its checks
// join those of tel, the telemetry server's, when REPLYFLOW_METRICS_ADDR
// is set; that address tells everyone why.
func gatewayReadiness(c client.Client, tel *telemetry.Telemetry, platforms, stopping telemetry.Check, detail func(*http.Request) bool) (http.Handler, error) {
	if tel == nil {
		var err error
		if tel, err = telemetry.New(); err != nil {
			return nil, err
		}
	}
	tel.AddCheck("temporal", telemetry.TemporalCheck(c))
	tel.AddCheck("platforms", platforms)
	tel.AddCheck("stopping", stopping)
	started(tel)
	return tel.PublicReadyHandler(detail), nil
}

// operatorDetail says which requests to the gateway's own listeners (the
// web chat's and the webhooks', which anyone may reach) are told why a
// readiness check or a platform's connection fails: those that carry the
// web chat's bot token (REPLYFLOW_WEBCHAT_BOT_TOKEN) as a Bearer token,
// the secret that already authorizes the bot API there, and that
// replyflow status sends. Without the web chat, none are: the reasons
// are on REPLYFLOW_METRICS_ADDR and in the log. A request from loopback
// is told no more than another, as a reverse proxy on the same host
// makes every request come from there.
func operatorDetail(cfg Config) func(*http.Request) bool {
	chat := webchatSettings(cfg)
	if chat == nil || !chat.On || chat.BotToken == "" {
		return func(*http.Request) bool { return false }
	}
	want := []byte("Bearer " + chat.BotToken)
	return func(r *http.Request) bool {
		return subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) == 1
	}
}

// serveHTTP serves muxes[i] on listeners[i], each with its own server.
// stopped receives each server's end, and holds one per server so that
// none blocks on sending.
func serveHTTP(listeners []net.Listener, muxes []*http.ServeMux, timeout time.Duration) (servers []*http.Server, stopped <-chan error) {
	done := make(chan error, len(listeners))
	for i, l := range listeners {
		srv := newHTTPServer(muxes[i], timeout)
		servers = append(servers, srv)
		go func() { done <- fmt.Errorf("gateway HTTP server on %s stopped: %w", l.Addr(), srv.Serve(l)) }()
	}
	return servers, done
}

// shutdownHTTP lets the requests in flight finish until ctx is done, and
// closes a server whose requests did not.
func shutdownHTTP(ctx context.Context, servers []*http.Server) {
	for _, srv := range servers {
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
	}
}
