package store

import (
	"context"
	"fmt"
	"time"
)

// SaveToolResult keeps a tool call's result for the later steps of its
// turn. A second write of the same call (a retried write) changes
// nothing. Results older than the retention (Retention.ToolResults, as
// long as a turn may still read them) are deleted on the way.
func (s *Store) SaveToolResult(ctx context.Context, sessionID, turnID, callID, output string, isError bool) error {
	now := time.Now().UTC()
	if err := s.prune(ctx, s.db, "tool_results", "session_id, turn_id, call_id", "created_at", now.Add(-s.retention.ToolResults)); err != nil {
		return fmt.Errorf("save the result of tool call %s (turn %s of %s): %w", callID, turnID, sessionID, err)
	}
	if _, err := s.db.ExecContext(ctx, s.q(`INSERT INTO tool_results (session_id, turn_id, call_id, output, is_error, created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (session_id, turn_id, call_id) DO NOTHING`),
		sessionID, turnID, callID, withoutNUL(output), isError, now); err != nil {
		return fmt.Errorf("save the result of tool call %s (turn %s of %s): %w", callID, turnID, sessionID, err)
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
