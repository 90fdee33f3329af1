package activities

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"

	"github.com/replyflow/replyflow/pipeline"
)

// ReadHeartbeatChecklist returns the heartbeat checklist (the file
// REPLYFLOW_HEARTBEAT_FILE names), trimmed: "" when none is configured,
// when the file is missing (said once at Warn, again only after it was
// back) or empty, and the session skips the tick. It is read at every
// tick, so an edit applies at the next one. A file past
// MaxChecklistBytes is cut at its last line that fits.
func (h *Heartbeats) ReadHeartbeatChecklist(_ context.Context, key pipeline.SessionKey) (string, error) {
	if h.ChecklistFile == "" {
		return "", nil
	}
	f, err := os.Open(h.ChecklistFile)
	if errors.Is(err, fs.ErrNotExist) {
		if h.warnedMissing.CompareAndSwap(false, true) {
			h.logger().Warn("Heartbeat checklist file is missing: heartbeat ticks are skipped until it exists (REPLYFLOW_HEARTBEAT_FILE)",
				"file", h.ChecklistFile, "session", key.WorkflowID())
		}
		return "", nil
	}
	if err != nil {
		return "", h.unreadable(err)
	}
	defer f.Close()
	h.warnedMissing.Store(false)
	data, err := io.ReadAll(io.LimitReader(f, MaxChecklistBytes+1))
	if err != nil {
		return "", h.unreadable(err)
	}
	if len(data) > MaxChecklistBytes {
		data = cutAtLine(data[:MaxChecklistBytes])
		if h.warnedLong.CompareAndSwap(false, true) {
			h.logger().Warn(fmt.Sprintf("Heartbeat checklist is longer than %d KiB: only its first lines are used; shorten it", MaxChecklistBytes>>10),
				"file", h.ChecklistFile)
		}
	}
	return strings.TrimSpace(string(data)), nil
}

// unreadable: a checklist that is there but cannot be read (permissions,
// a directory) needs a person, not a retry.
func (h *Heartbeats) unreadable(err error) error {
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("read the heartbeat checklist %s (REPLYFLOW_HEARTBEAT_FILE): %v", h.ChecklistFile, err), pipeline.ErrChecklistUnreadable, err)
}

// cutAtLine keeps data up to its last line break, or, with none, up to
// its last whole character.
func cutAtLine(data []byte) []byte {
	if i := strings.LastIndexByte(string(data), '\n'); i >= 0 {
		return data[:i]
	}
	for len(data) > 0 && !utf8.Valid(data) {
		data = data[:len(data)-1]
	}
	return data
}
