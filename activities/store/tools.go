package store

import (
	"context"
	"fmt"
	"time"
)

// toolResultsKept is how long a tool result stays: far longer than any
// turn (REPLYFLOW_TURN_TIMEOUT bounds each step), short enough that the
// table stays small.
const toolResultsKept = 48 * time.Hour

// SaveToolResult keeps a tool call's result for the later steps of its
// turn. A second write of the same call (a retried write) changes
// nothing. Results older than toolResultsKept are deleted on the way.
func (s *Store) SaveToolResult(ctx context.Context, sessionID, turnID, callID, output string, isError bool) error {
	now := time.Now().UTC()
	if _, err := s.db.ExecContext(ctx, s.q(`INSERT INTO tool_results (session_id, turn_id, call_id, output, is_error, created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (session_id, turn_id, call_id) DO NOTHING`),
		sessionID, turnID, callID, output, isError, now); err != nil {
		return fmt.Errorf("save the result of tool call %s (turn %s of %s): %w", callID, turnID, sessionID, err)
	}
	if _, err := s.db.ExecContext(ctx, s.q(`DELETE FROM tool_results WHERE created_at < ?`), now.Add(-toolResultsKept)); err != nil {
		return fmt.Errorf("delete old tool results: %w", err)
	}
	return nil
}

// ToolResult is a saved result.
type ToolResult struct {
	Output  string
	IsError bool
}

// ToolResults are the saved results of a turn's tool calls, by call ID.
func (s *Store) ToolResults(ctx context.Context, sessionID, turnID string) (map[string]ToolResult, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT call_id, output, is_error FROM tool_results WHERE session_id = ? AND turn_id = ?`), sessionID, turnID)
	if err != nil {
		return nil, fmt.Errorf("read the tool results of turn %s of %s: %w", turnID, sessionID, err)
	}
	defer rows.Close()
	out := map[string]ToolResult{}
	for rows.Next() {
		var id string
		var r ToolResult
		if err := rows.Scan(&id, &r.Output, &r.IsError); err != nil {
			return nil, fmt.Errorf("read the tool results of turn %s of %s: %w", turnID, sessionID, err)
		}
		out[id] = r
	}
	return out, rows.Err()
}
