package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
)

// settledHistory reads a workflow's current run, once no new event has
// appeared for half a second (its timers and clears have run).
func settledHistory(ctx context.Context, c client.Client, id string) ([]*historypb.HistoryEvent, error) {
	var last []*historypb.HistoryEvent
	for {
		var events []*historypb.HistoryEvent
		iter := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			ev, err := iter.Next()
			if err != nil {
				return nil, err
			}
			events = append(events, ev)
		}
		if last != nil && len(events) == len(last) {
			return events, nil
		}
		last = events
		time.Sleep(500 * time.Millisecond)
	}
}

// serverActions reads the Temporal server's own action counter (its
// Prometheus metric "action") for the namespace default, by type.
func serverActions(ctx context.Context, metricsURL string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read the server's metrics: %w", err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	scanner := bufio.NewScanner(resp.Body)
	scanner.Buffer(make([]byte, 64<<10), 1<<20)
	for scanner.Scan() {
		line := scanner.Text()
		if !strings.HasPrefix(line, "action{") || !strings.Contains(line, `namespace="default"`) {
			continue
		}
		labels, value, _ := strings.Cut(line, "} ")
		_, kind, _ := strings.Cut(labels, `action_type="`)
		kind, _, _ = strings.Cut(kind, `"`)
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err == nil {
			out[kind] += v
		}
	}
	return out, scanner.Err()
}

// heartbeatsBetween is how many activity heartbeats reached the server
// between two readings of serverActions.
func heartbeatsBetween(before, after map[string]float64) int {
	return int(after["grpc_RecordActivityTaskHeartbeat"] - before["grpc_RecordActivityTaskHeartbeat"] +
		after["grpc_RecordActivityTaskHeartbeatById"] - before["grpc_RecordActivityTaskHeartbeatById"])
}
