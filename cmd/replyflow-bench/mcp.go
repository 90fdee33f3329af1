package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/cmd/internal/harness"
)

// mcpStdioEnv, set to "1", makes this program an MCP server on its
// standard input and output instead of the bench: the stdio server the
// MCP stage's worker starts.
const mcpStdioEnv = "REPLYFLOW_BENCH_MCP_STDIO"

// mcpBenchTools is how many tools each benched MCP server offers.
const mcpBenchTools = 20

// mcpBenchRounds is how often each configuration's worker is started.
const mcpBenchRounds = 3

type benchQuery struct {
	Q string `json:"q"`
}

// benchMCPServer is a server with mcpBenchTools read-only tools.
func benchMCPServer(name string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	for i := range mcpBenchTools {
		mcp.AddTool(srv, &mcp.Tool{Name: fmt.Sprintf("tool_%02d", i), Description: "Look something up in the bench's data, by a query.",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(_ context.Context, _ *mcp.CallToolRequest, in benchQuery) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found " + in.Q}}}, nil, nil
			})
	}
	return srv
}

// serveMCPStdio runs the bench's stdio MCP server until its input ends.
func serveMCPStdio() error {
	return benchMCPServer("bench-stdio").Run(context.Background(), &mcp.StdioTransport{})
}

// benchMCP measures what two MCP servers (a stdio one this program
// serves, a Streamable HTTP one) cost a worker: the time from its start
// to ready (/readyz), which includes listing their tools, and its
// resident memory once ready, beside a worker with none, each started
// mcpBenchRounds times in turn.
func benchMCP(ctx context.Context, _ client.Client, o options) ([][]string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return benchMCPServer("bench-http") }, nil))
	defer hs.Close()
	file, err := json.Marshal(map[string]any{"servers": []map[string]any{
		{"name": "stdio", "command": self, "env": []string{mcpStdioEnv}},
		{"name": "http", "url": hs.URL},
	}})
	if err != nil {
		return nil, err
	}
	mcpFile := filepath.Join(o.workDir, "mcp.json")
	if err := os.WriteFile(mcpFile, file, 0o600); err != nil {
		return nil, err
	}
	botID := time.Now().UnixNano() % 1_000_000_000
	fake := telegramtest.New(strconv.FormatInt(botID, 10) + ":bench-mcp")
	defer fake.Close()

	type sample struct{ start, rss []float64 }
	var none, two sample
	for round := range mcpBenchRounds {
		for _, withMCP := range []bool{false, true} {
			vars := map[string]string{"WORKER_VERSIONING": "false", "CODEC_KEYS": o.codecKeys}
			name := "none"
			if withMCP {
				vars["MCP_FILE"], name = mcpFile, "two"
			}
			start, rss, err := startAndMeasure(ctx, o, fake, vars, fmt.Sprintf("bench-mcp-%d-%s-%d", botID, name, round))
			if err != nil {
				return nil, err
			}
			s := &none
			if withMCP {
				s = &two
			}
			s.start, s.rss = append(s.start, start.Seconds()*1000), append(s.rss, float64(rss))
		}
	}
	row := func(what string, base, with []float64, unit func(float64) string) []string {
		b, w := median(base), median(with)
		return []string{what, fmt.Sprintf("%s without, %s with two servers (%.2f×)", unit(b), unit(w), w/b), ""}
	}
	ms := func(v float64) string { return fmt.Sprintf("%.0f ms", v) }
	mib := func(v float64) string { return mb(int64(v)) }
	return [][]string{
		row(fmt.Sprintf("worker start to ready, 2 MCP servers of %d tools (median of %d)", mcpBenchTools, mcpBenchRounds), none.start, two.start, ms),
		row("worker memory once ready, 2 MCP servers", none.rss, two.rss, mib),
	}, nil
}

// startAndMeasure starts a worker on its own task queue, waits for its
// /readyz, reads its memory, and stops it.
func startAndMeasure(ctx context.Context, o options, fake *telegramtest.Server, vars map[string]string, queue string) (time.Duration, int64, error) {
	port, err := harness.FreePort()
	if err != nil {
		return 0, 0, err
	}
	vars["METRICS_ADDR"] = "127.0.0.1:" + strconv.Itoa(port)
	env := append(harness.Env(o.address, queue, filepath.Join(o.workDir, queue+".db"), fake, vars), mcpStdioEnv+"=1")
	worker := harness.Worker(o.replyflow, env, filepath.Join(o.workDir, queue+".log"))
	began := time.Now()
	if err := worker.Start(); err != nil {
		return 0, 0, err
	}
	defer worker.Stop()
	ready := "http://127.0.0.1:" + strconv.Itoa(port) + "/readyz"
	deadline := began.Add(time.Minute)
	for {
		if resp, err := http.Get(ready); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("worker %s not ready in a minute\n%s", queue, worker.Tail())
		}
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(began)
	rss, err := worker.RSS()
	return took, rss, err
}

// median is the middle of the values (the mean of the two middle ones
// for an even count); 0 for none.
func median(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	mid := len(sorted) / 2
	if len(sorted)%2 == 0 {
		return (sorted[mid-1] + sorted[mid]) / 2
	}
	return sorted[mid]
}
