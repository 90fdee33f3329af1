package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/replyflow/replyflow/cmd/internal/devserver"
	"github.com/replyflow/replyflow/workflows"
)

// ServerVersion is the Temporal server the cluster runs, the one the
// Temporal CLI's dev server embeds; the Makefile builds the same
// (go install go.temporal.io/server/cmd/server@v1.29.1), and its module
// ships the PostgreSQL schema the cluster is set up with.
const ServerVersion = "v1.29.1"

// DefaultPostgres is REPLYFLOW_TEST_POSTGRES_DSN, else the PostgreSQL
// `make test` checks for (cmd/internal/prereqs).
func DefaultPostgres() string {
	if dsn := os.Getenv("REPLYFLOW_TEST_POSTGRES_DSN"); dsn != "" {
		return dsn
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// ClusterOptions say how to run a real Temporal cluster.
type ClusterOptions struct {
	// Server and SQLTool are the temporal-server and temporal-sql-tool
	// binaries (make builds them into bin/).
	Server, SQLTool string
	// Postgres is a postgres:// URL whose user may create databases; the
	// cluster makes two of its own there and drops them at Stop.
	Postgres string
	// Nodes is how many server processes form the cluster (1 when 0).
	Nodes int
	// Shards is the number of history shards (8 when 0): spread over the
	// nodes, and moved to the survivors when a node dies.
	Shards int
	// Dir holds each node's configuration and log.
	Dir string
}

// Cluster is a real Temporal server on PostgreSQL: one process per node,
// each running every service (frontend, history, matching, worker) on
// ports of its own, all on one pair of databases, found by each other
// through the membership table there. Clients dial Address, a balancer
// over the nodes' frontends, as production dials a load balancer.
type Cluster struct {
	Nodes []*Proc
	// Frontends are the nodes' frontend addresses, in node order.
	Frontends []string
	// Address is the balancer in front of the frontends.
	Address string
	opts    ClusterOptions
	pg      *url.URL
	dbs     []string
	lb      *TCPBalancer
}

// nodePorts are the ports one node listens on.
type nodePorts struct {
	frontend, frontendHTTP, frontendRing int
	history, historyRing                 int
	matching, matchingRing               int
	worker, workerRing                   int
}

// StartCluster sets up the databases (temporal-sql-tool, with the schema
// of the server module), writes each node's configuration, starts the
// nodes one after the other, and registers the namespace "default" and
// replyflow's search attributes.
func StartCluster(ctx context.Context, o ClusterOptions) (*Cluster, error) {
	o.Nodes, o.Shards = max(o.Nodes, 1), cmpOr(o.Shards, 8)
	pg, err := url.Parse(o.Postgres)
	if err != nil || pg.Scheme != "postgres" && pg.Scheme != "postgresql" {
		return nil, fmt.Errorf("the cluster's PostgreSQL must be a postgres:// URL, got %q", o.Postgres)
	}
	c := &Cluster{opts: o, pg: pg}
	ok := false
	defer func() {
		if !ok {
			c.Stop()
		}
	}()
	if err := c.setUpDatabases(ctx); err != nil {
		return nil, err
	}
	ports, err := FreePorts(9 * o.Nodes)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	dynamic := filepath.Join(o.Dir, "dynamicconfig.yaml")
	if err := os.WriteFile(dynamic, []byte(clusterDynamicConfig()), 0o644); err != nil {
		return nil, err
	}
	var nodes []nodePorts
	for i := range o.Nodes {
		p := ports[9*i:]
		nodes = append(nodes, nodePorts{p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8]})
		c.Frontends = append(c.Frontends, "127.0.0.1:"+strconv.Itoa(p[0]))
	}
	for i, n := range nodes {
		dir := filepath.Join(o.Dir, fmt.Sprintf("node%d", i+1))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, "node.yaml"), []byte(c.nodeConfig(n, nodes[0].frontend, dynamic)), 0o644); err != nil {
			return nil, err
		}
		args := []string{"--root", dir, "--config", ".", "--env", "node", "--allow-no-auth", "start"}
		c.Nodes = append(c.Nodes, NewProc(fmt.Sprintf("temporal node %d", i+1), o.Server, args, nil, filepath.Join(o.Dir, fmt.Sprintf("node%d.log", i+1))))
	}
	// The first node alone creates what a new cluster needs (its
	// metadata, the shards); the others join it.
	for i := range c.Nodes {
		if err := c.Restart(ctx, i); err != nil {
			return nil, err
		}
	}
	if c.lb, err = NewTCPBalancer(c.Frontends); err != nil {
		return nil, err
	}
	c.Address = c.lb.Address()
	if err := c.registerNamespace(ctx); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

func cmpOr(v, fallback int) int {
	if v == 0 {
		return fallback
	}
	return v
}

// NewDatabase creates an empty database beside the cluster's (dropped
// with them at Stop) and returns its postgres:// URL: the store of the
// workers that run on the cluster.
func (c *Cluster) NewDatabase(ctx context.Context, name string) (string, error) {
	db := c.dbs[0][:strings.LastIndex(c.dbs[0], "_")] + "_" + name
	if err := c.sqlTool(ctx, db, "create-database"); err != nil {
		return "", err
	}
	c.dbs = append(c.dbs, db)
	u := *c.pg
	u.Path = "/" + db
	q := u.Query()
	if q.Get("sslmode") == "" {
		q.Set("sslmode", "disable")
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// Restart starts node i (again) and waits until its frontend answers.
func (c *Cluster) Restart(ctx context.Context, i int) error {
	if err := c.Nodes[i].Start(); err != nil {
		return err
	}
	// A node joining a cluster waits for its ring first.
	return waitForFrontend(ctx, c.Frontends[i], c.Nodes[i], 2*time.Minute)
}

// Stop stops every node and drops the cluster's databases.
func (c *Cluster) Stop() {
	if c.lb != nil {
		c.lb.Close()
	}
	for _, n := range c.Nodes {
		n.Stop()
	}
	for _, db := range c.dbs {
		_ = c.sqlTool(context.Background(), db, "drop-database", "--force")
	}
}

// waitForFrontend waits, up to within, until the frontend at address
// answers a health check; it gives up at once when p died.
func waitForFrontend(ctx context.Context, address string, p *Proc, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		c, err := client.DialContext(ctx, client.Options{HostPort: address, Logger: quietLogger{}})
		if err == nil {
			_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
			c.Close()
			if err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil || !p.Running() {
			return fmt.Errorf("%s at %s did not come up: %v\n%s", p.Name, address, err, p.Tail())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// schemaDir is the PostgreSQL schema of the server module, from the Go
// module cache (go mod download fetches it if the server was built
// elsewhere).
func schemaDir(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "mod", "download", "-json", "go.temporal.io/server@"+ServerVersion).Output()
	if err != nil {
		return "", fmt.Errorf("find the Temporal server module %s (go mod download): %w", ServerVersion, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return "", fmt.Errorf("find the Temporal server module %s: no folder in %q", ServerVersion, out)
	}
	return filepath.Join(mod.Dir, "schema", "postgresql", "v12"), nil
}

// setUpDatabases creates the cluster's two databases and their schema
// with temporal-sql-tool, as docs/deploy.md's "Scaling out" does.
func (c *Cluster) setUpDatabases(ctx context.Context) error {
	schema, err := schemaDir(ctx)
	if err != nil {
		return err
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	prefix := "replyflow_cluster_" + hex.EncodeToString(b)
	for _, kind := range []string{"temporal", "visibility"} {
		db := prefix + "_" + kind
		if err := c.sqlTool(ctx, db, "create-database"); err != nil {
			return err
		}
		c.dbs = append(c.dbs, db)
		if err := c.sqlTool(ctx, db, "setup-schema", "-v", "0.0"); err != nil {
			return err
		}
		if err := c.sqlTool(ctx, db, "update-schema", "-d", filepath.Join(schema, kind, "versioned")); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) sqlTool(ctx context.Context, db string, args ...string) error {
	host, port := c.pg.Hostname(), cmpOrString(c.pg.Port(), "5432")
	password, _ := c.pg.User.Password()
	all := append([]string{"--plugin", "postgres12", "--ep", host, "-p", port, "-u", c.pg.User.Username(), "--pw", password, "--db", db}, args...)
	cmd := exec.CommandContext(ctx, c.opts.SQLTool, all...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("temporal-sql-tool %s on %s: %w\n%s", args[0], db, err, lastLines(string(out), 10))
	}
	return nil
}

func cmpOrString(v, fallback string) string {
	if v == "" {
		return fallback
	}
	return v
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// clusterDynamicConfig is the dev server's tuning (package devserver:
// eager activities, quick task reads) and what a test cluster needs on
// top: new namespaces and search attributes seen by every node at once,
// instead of at the next cache refresh (10 s, 60 s).
func clusterDynamicConfig() string {
	var b strings.Builder
	for _, kv := range append(devserver.DynamicConfig(),
		"system.forceSearchAttributesCacheRefreshOnRead=true",
		"system.namespaceCacheRefreshInterval=1s",
	) {
		key, value, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "%s:\n  - value: %s\n", key, value)
	}
	return b.String()
}

// nodeConfig is one node's configuration: its own ports, the shared
// databases, a small connection pool per service (four services a node,
// two nodes and the workers' store share PostgreSQL's 100 connections).
func (c *Cluster) nodeConfig(p nodePorts, firstFrontend int, dynamic string) string {
	password, _ := c.pg.User.Password()
	store := func(db string, conns int) string {
		return fmt.Sprintf(`      sql:
        pluginName: "postgres12"
        databaseName: %q
        connectAddr: %q
        connectProtocol: "tcp"
        user: %q
        password: %q
        maxConns: %d
        maxIdleConns: %d
        maxConnLifetime: "1h"
`, db, c.pg.Hostname()+":"+cmpOrString(c.pg.Port(), "5432"), c.pg.User.Username(), password, conns, conns)
	}
	service := func(grpc, ring int) string {
		return fmt.Sprintf("    rpc:\n      grpcPort: %d\n      membershipPort: %d\n      bindOnLocalHost: true\n", grpc, ring)
	}
	return fmt.Sprintf(`log:
  stdout: true
  level: warn
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: %d
  datastores:
    default:
%s    visibility:
%sglobal:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "127.0.0.1"
services:
  frontend:
%s      httpPort: %d
  history:
%s  matching:
%s  worker:
%sclusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: "active"
  currentClusterName: "active"
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: "frontend"
      rpcAddress: "127.0.0.1:%d"
dcRedirectionPolicy:
  policy: "noop"
dynamicConfigClient:
  filepath: %q
  pollInterval: "10s"
`, c.opts.Shards, store(c.dbs[0], 4), store(c.dbs[1], 2),
		service(p.frontend, p.frontendRing), p.frontendHTTP,
		service(p.history, p.historyRing), service(p.matching, p.matchingRing), service(p.worker, p.workerRing),
		firstFrontend, dynamic)
}

// registerNamespace registers "default" (one day of retention) and
// replyflow's search attributes, and waits until every frontend knows
// them.
func (c *Cluster) registerNamespace(ctx context.Context) error {
	cl, err := client.DialContext(ctx, client.Options{HostPort: c.Frontends[0], Logger: quietLogger{}})
	if err != nil {
		return err
	}
	defer cl.Close()
	_, err = cl.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace:                        "default",
		WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
	})
	var exists *serviceerror.NamespaceAlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("register the namespace default: %w", err)
	}
	attrs := map[string]enumspb.IndexedValueType{}
	for _, sa := range workflows.SearchAttributes() {
		name, kind, _ := strings.Cut(sa, "=")
		attrs[name] = enumspb.IndexedValueType(enumspb.IndexedValueType_value["INDEXED_VALUE_TYPE_"+strings.ToUpper(kind)])
	}
	deadline := time.Now().Add(time.Minute)
	for {
		// The namespace reaches the operator service at its next cache
		// refresh (1 s here).
		_, err = cl.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: "default", SearchAttributes: attrs})
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("register replyflow's search attributes: %w", err)
	}
	for _, fe := range c.Frontends {
		if err := waitForNamespace(ctx, fe); err != nil {
			return err
		}
	}
	return nil
}

// waitForNamespace waits until the frontend at address lists "default".
func waitForNamespace(ctx context.Context, address string) error {
	cl, err := client.DialContext(ctx, client.Options{HostPort: address, Namespace: "default", Logger: quietLogger{}})
	if err != nil {
		return err
	}
	defer cl.Close()
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := cl.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", Query: "ReplyflowState = 'idle'"})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the frontend %s does not serve the namespace default with replyflow's search attributes: %w", address, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
