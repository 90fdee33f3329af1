package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/cmd/internal/harness"
)

// clusterOptions are -cluster's: a real Temporal server on PostgreSQL
// (cmd/internal/harness), measured beside the dev server in the same run.
type clusterOptions struct {
	on              bool
	server, sqlTool string
	postgres        string
	nodes           int
	workers         []int
	sessions        int
}

// scaled is one server the scaling rows are measured on.
type scaled struct {
	name string
	c    client.Client
	// address is the server's, for the workers; store gives each rig
	// its own store.
	address string
	store   func(ctx context.Context, name string) (string, error)
}

// benchCluster measures, on the dev server and on the cluster, the
// accepted → first chunk latency of o.cluster.sessions sessions that
// pause like people, and the turns a second they reach with no pause,
// with one, two and three workers (-cluster-workers) on one task queue.
// Every rig's store is on PostgreSQL: several workers share it, which
// SQLite does on one machine only.
func benchCluster(ctx context.Context, dev client.Client, o options) ([][]string, error) {
	cc := o.cluster
	cluster, err := harness.StartCluster(ctx, harness.ClusterOptions{
		Server: cc.server, SQLTool: cc.sqlTool, Postgres: cc.postgres, Nodes: cc.nodes, Dir: filepath.Join(o.workDir, "cluster"),
	})
	if err != nil {
		return nil, err
	}
	defer cluster.Stop()
	cl, err := harness.Dial(ctx, cluster.Address, o.codecKeys)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	servers := []scaled{
		{name: "dev server", c: dev, address: o.address, store: cluster.NewDatabase},
		{name: fmt.Sprintf("cluster (%d node%s, PostgreSQL)", cc.nodes, plural(cc.nodes)), c: cl, address: cluster.Address, store: cluster.NewDatabase},
	}
	var rows [][]string
	for _, workers := range cc.workers {
		for _, srv := range servers {
			fmt.Fprintf(os.Stderr, "  %s, %d worker%s…\n", srv.name, workers, plural(workers))
			r, err := scaleRows(ctx, srv, o, workers)
			if err != nil {
				return nil, fmt.Errorf("%s, %d workers: %w", srv.name, workers, err)
			}
			rows = append(rows, r...)
		}
	}
	return rows, nil
}

func scaleRows(ctx context.Context, srv scaled, o options, workers int) ([][]string, error) {
	name := fmt.Sprintf("scale-%s-%d", strings.Fields(srv.name)[0], workers)
	store, err := srv.store(ctx, strings.ReplaceAll(name, "-", "_"))
	if err != nil {
		return nil, err
	}
	ro := o
	ro.address = srv.address
	r, stop, err := startE2EWith(ctx, srv.c, ro, name, nil, workers, store)
	if err != nil {
		return nil, err
	}
	defer stop()
	label := fmt.Sprintf("%s, %d worker%s: ", srv.name, workers, plural(workers))
	var rows [][]string
	for _, think := range []bool{true, false} {
		pause := o.think
		if !think {
			pause = 0
		}
		row, err := r.latency(ctx, o.cluster.sessions, o.messages, pause)
		if err != nil {
			return nil, r.withLog(err)
		}
		row[0], row[2] = label+row[0], ""
		rows = append(rows, row)
	}
	return rows, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
