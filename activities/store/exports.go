package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ExportDocument is the document an export (/export) started with, and
// how many transcript messages it holds.
type ExportDocument struct {
	Text     string
	Messages int
}

// KeepExport fixes an export's document at its first attempt: it saves
// doc under the export's key unless a document is saved there already,
// and returns the saved one. Two attempts racing agree on the first
// written. Exports older than the delivery ledger's retention are
// deleted on the way: the document lives as long as the ledger entries
// of its parts, so a retry never rebuilds a document whose first parts
// the ledger still skips.
func (s *Store) KeepExport(ctx context.Context, sessionID, key string, doc ExportDocument) (ExportDocument, error) {
	now := time.Now().UTC()
	if err := s.prune(ctx, s.db, "export_documents", "session_id, export_key", "created_at", now.Add(-s.retention.Deliveries)); err != nil {
		return ExportDocument{}, fmt.Errorf("keep export %s of %s: %w", key, sessionID, err)
	}
	if _, err := s.db.ExecContext(ctx, s.q(`INSERT INTO export_documents (session_id, export_key, document, messages, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (session_id, export_key) DO NOTHING`),
		sessionID, key, withoutNUL(doc.Text), doc.Messages, now); err != nil {
		return ExportDocument{}, fmt.Errorf("keep export %s of %s: %w", key, sessionID, err)
	}
	kept, found, err := s.Export(ctx, sessionID, key)
	if err == nil && !found {
		err = errors.New("the document was written, then not found")
	}
	if err != nil {
		return ExportDocument{}, fmt.Errorf("keep export %s of %s: %w", key, sessionID, err)
	}
	return kept, nil
}

// Export is the document KeepExport saved under key, if any.
func (s *Store) Export(ctx context.Context, sessionID, key string) (ExportDocument, bool, error) {
	var doc ExportDocument
	err := s.db.QueryRowContext(ctx, s.q(`SELECT document, messages FROM export_documents WHERE session_id = ? AND export_key = ?`), sessionID, key).Scan(&doc.Text, &doc.Messages)
	if errors.Is(err, sql.ErrNoRows) {
		return ExportDocument{}, false, nil
	}
	if err != nil {
		return ExportDocument{}, false, fmt.Errorf("read export %s of %s: %w", key, sessionID, err)
	}
	return doc, true, nil
}
