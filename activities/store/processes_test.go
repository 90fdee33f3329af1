package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// gatewayProcessDSN, when set, makes TestSQLiteFileSharedByAGatewayAndAWorkerProcess
// the gateway's process: it writes its share into that store and exits.
const gatewayProcessDSN = "REPLYFLOW_STORE_TEST_GATEWAY_DSN"

// sharedWrites is how many messages each process writes.
const sharedWrites = 40

// TestSQLiteFileSharedByAGatewayAndAWorkerProcess runs a gateway's writes
// (the files of users' messages, the web chat's history) in another
// process, this test's binary again, while this one writes as a worker
// does (transcripts), both on one new SQLite file, as the systemd units
// of deploy/ run them: both migrate the file at once, every write waits
// its turn instead of failing as busy, and the worker then reads every
// file the gateway recorded.
func TestSQLiteFileSharedByAGatewayAndAWorkerProcess(t *testing.T) {
	ctx := context.Background()
	if dsn := os.Getenv(gatewayProcessDSN); dsn != "" {
		s, err := Open(ctx, dsn)
		require.NoError(t, err)
		defer s.Close()
		for i := range sharedWrites {
			id := fmt.Sprintf("m%d", i)
			require.NoError(t, s.RecordMedia(ctx, "session:webchat:c", id, []pipeline.Media{{Kind: "photo", Ref: "ref-" + id}}))
			_, _, err := s.AddChatMessage(ctx, adapters.ChatLogMessage{Chat: "c", ID: id, Key: "user:" + id, Kind: "user", Data: []byte(`{}`)})
			require.NoError(t, err)
		}
		return
	}

	dsn := filepath.Join(t.TempDir(), "replyflow.db")
	gateway := exec.Command(os.Args[0], "-test.run=^TestSQLiteFileSharedByAGatewayAndAWorkerProcess$", "-test.count=1")
	gateway.Env = append(os.Environ(), gatewayProcessDSN+"="+dsn)
	var out bytes.Buffer
	gateway.Stdout, gateway.Stderr = &out, &out
	require.NoError(t, gateway.Start())

	worker, err := Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { worker.Close() })
	transcript, err := worker.StartTranscript(ctx, "session:webchat:c", "t1")
	require.NoError(t, err)
	for i := range sharedWrites {
		require.NoError(t, worker.Append(ctx, transcript, []Message{{Key: fmt.Sprintf("w%d", i), Role: "user", Sender: "alice", Body: "hi", CreatedAt: time.Now()}}))
	}
	require.NoError(t, gateway.Wait(), "the gateway's process:\n%s", out.String())

	var ids []string
	for i := range sharedWrites {
		ids = append(ids, fmt.Sprintf("m%d", i))
	}
	media, err := worker.MessageMedia(ctx, "session:webchat:c", ids)
	require.NoError(t, err)
	assert.Len(t, media, sharedWrites, "the worker reads every file the gateway recorded")
	assert.Equal(t, "ref-m7", media["m7"][0].Ref)
	history, err := worker.ChatMessages(ctx, "c")
	require.NoError(t, err)
	assert.Len(t, history, sharedWrites)
	recent, err := worker.Recent(ctx, transcript, 2*sharedWrites)
	require.NoError(t, err)
	assert.Len(t, recent, sharedWrites)
}
