package main

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/replyflow/replyflow/cmd/internal/harness"
)

// clusterConfig is the cluster mode (-cluster, `make cluster`): a real
// Temporal server on PostgreSQL with several nodes, several workers and
// several gateways behind a balancer, the store on PostgreSQL too.
type clusterConfig struct {
	server, sqlTool string // temporal-server and temporal-sql-tool
	postgres        string // a postgres:// URL that may create databases
	nodes           int
	workers         int
	gateways        int
}

// webhookSecret is the Telegram webhook's secret token in cluster mode.
const webhookSecret = "chaos-webhook-secret"

// startDev runs one dev server (on a database file, so a kill loses
// nothing), one worker and one gateway, the store on SQLite.
func (r *rig) startDev(ctx context.Context, extra map[string]string) (func(), error) {
	for _, p := range r.platforms {
		maps.Copy(extra, p.env())
	}
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	temporal, err := harness.StartTemporal(ctx, r.cfg.temporalCLI, filepath.Join(r.cfg.workDir, "temporal.db"), filepath.Join(r.cfg.workDir, "temporal.log"))
	if err != nil {
		return stop, err
	}
	stops = append(stops, temporal.Stop)
	r.address, r.servers = temporal.Address, []*harness.Proc{temporal.Proc}
	r.restartServer = func(ctx context.Context, _ int) error { return temporal.Restart(ctx) }
	env := harness.Env(r.address, "chaos", filepath.Join(r.cfg.workDir, "replyflow.db"), nil, extra)
	r.workers = []*harness.Proc{harness.Worker(r.cfg.replyflow, env, filepath.Join(r.cfg.workDir, "worker.log"))}
	gateway, err := harness.Gateway(r.cfg.replyflow, env, filepath.Join(r.cfg.workDir, "gateway.log"))
	if err != nil {
		return stop, err
	}
	r.gateways = []*harness.Proc{gateway}
	return stop, r.startProcs(ctx, &stops)
}

// startCluster runs the cluster mode: the Temporal nodes, the store's
// database beside theirs, the workers, and the gateways behind an HTTP
// balancer that Telegram's webhook points at.
func (r *rig) startCluster(ctx context.Context, extra map[string]string) (func(), error) {
	cc := r.cfg.cluster
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	cluster, err := harness.StartCluster(ctx, harness.ClusterOptions{
		Server: cc.server, SQLTool: cc.sqlTool, Postgres: cc.postgres, Nodes: cc.nodes, Dir: r.cfg.workDir,
	})
	if err != nil {
		return stop, err
	}
	stops = append(stops, cluster.Stop)
	r.address, r.servers, r.restartServer = cluster.Address, cluster.Nodes, cluster.Restart
	fmt.Fprintf(r.cfg.progress, "chaos: a Temporal cluster of %d nodes (frontends %s) behind %s\n", cc.nodes, strings.Join(cluster.Frontends, ", "), cluster.Address)
	store, err := cluster.NewDatabase(ctx, "store")
	if err != nil {
		return stop, err
	}

	// The gateways' addresses first: the balancer in front of them is
	// the webhook's address, which each gateway registers.
	ports, err := harness.FreePorts(cc.gateways)
	if err != nil {
		return stop, err
	}
	var backends []string
	for _, port := range ports {
		backends = append(backends, "http://127.0.0.1:"+strconv.Itoa(port))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return stop, err
	}
	lb := &http.Server{Handler: harness.NewHTTPBalancer(backends...), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = lb.Serve(ln) }()
	stops = append(stops, func() { _ = lb.Close() })
	for _, p := range r.platforms {
		maps.Copy(extra, p.env())
		if t, ok := p.(*telegramPlatform); ok {
			maps.Copy(extra, t.webhookEnv("http://"+ln.Addr().String()))
		}
	}

	env := harness.Env(r.address, "chaos", store, nil, extra)
	for i := range cc.workers {
		r.workers = append(r.workers, harness.Worker(r.cfg.replyflow, env, filepath.Join(r.cfg.workDir, fmt.Sprintf("worker%d.log", i+1))))
	}
	for i, port := range ports {
		log := filepath.Join(r.cfg.workDir, fmt.Sprintf("gateway%d.log", i+1))
		r.gateways = append(r.gateways, harness.GatewayAt(r.cfg.replyflow, env, log, "127.0.0.1:"+strconv.Itoa(port)))
	}
	return stop, r.startProcs(ctx, &stops)
}

// startProcs starts the workers, waits until their version is current
// (harness.AwaitCurrentVersion), then starts the gateways, adding their
// stops.
func (r *rig) startProcs(ctx context.Context, stops *[]func()) error {
	start := func(procs []*harness.Proc) error {
		for _, p := range procs {
			if err := p.Start(); err != nil {
				return err
			}
			*stops = append(*stops, p.Stop)
		}
		return nil
	}
	if err := start(r.workers); err != nil {
		return err
	}
	c, err := harness.Dial(ctx, r.address, r.cfg.codecKeys)
	if err != nil {
		return err
	}
	err = harness.AwaitCurrentVersion(ctx, c, "replyflow", "")
	c.Close()
	if err != nil {
		return err
	}
	return start(r.gateways)
}

// workerLogs is every worker's log, one after the other.
func (r *rig) workerLogs() string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(r.cfg.workDir, "worker*.log"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		b.Write(data)
	}
	return b.String()
}
