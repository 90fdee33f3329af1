package store

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

func TestKeepUploadOnSQLite(t *testing.T) {
	keepUploadSuite(t, func(t *testing.T) string { return filepath.Join(t.TempDir(), "store.db") })
}

func TestKeepUploadOnPostgreSQL(t *testing.T) {
	base := postgresBase(t)
	keepUploadSuite(t, func(t *testing.T) string { return freshDatabase(t, base) })
}

// keepUploadSuite: a message's uploaded file is written once. Neither its
// record nor its bytes change afterwards, whoever uploads under its ID,
// from however many gateways at once; a retry of the same upload is
// answered as kept; and what the worker keeps of the file still is.
func keepUploadSuite(t *testing.T, dsn func(*testing.T) string) {
	ctx := context.Background()
	const session = "session:webchat:room"
	cat := pipeline.Media{Kind: "photo", Ref: "upload:room/m1/0", MimeType: "image/png", Name: "cat.png"}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	open := func(t *testing.T, dsn string) *Store {
		s, err := Open(ctx, dsn)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	kept := func(t *testing.T, s *Store, id string) []StoredMedia {
		t.Helper()
		got, err := s.MessageMedia(ctx, session, []string{id})
		require.NoError(t, err)
		return got[id]
	}

	t.Run("the first file and bytes stay; the same upload again is kept, anything else taken", func(t *testing.T) {
		s := open(t, dsn(t))
		require.NoError(t, s.KeepUpload(ctx, session, "m1", cat, b64("meow")))
		want := []StoredMedia{{MessageID: "m1", Media: cat, Content: b64("meow")}}
		require.Equal(t, want, kept(t, s, "m1"))

		require.NoError(t, s.KeepUpload(ctx, session, "m1", cat, b64("meow")), "a retry")
		assert.ErrorIs(t, s.KeepUpload(ctx, session, "m1", cat, b64("woof")), adapters.ErrUploadTaken)
		other := cat
		other.Name, other.MimeType, other.Kind = "x.txt", "text/plain", "document"
		assert.ErrorIs(t, s.KeepUpload(ctx, session, "m1", other, b64("meow")), adapters.ErrUploadTaken)
		assert.Equal(t, want, kept(t, s, "m1"))
		data, ok, err := s.UploadedFile(ctx, cat.Ref)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, []byte("meow"), data)

		// Another chat's message of the same ID is another row.
		require.NoError(t, s.KeepUpload(ctx, "session:webchat:other", "m1", cat, b64("woof")))
		assert.Equal(t, want, kept(t, s, "m1"))
	})

	t.Run("a message recorded without bytes, or whose bytes are gone, gets none", func(t *testing.T) {
		s := open(t, dsn(t))
		require.NoError(t, s.RecordMedia(ctx, session, "m2", []pipeline.Media{cat}))
		assert.ErrorIs(t, s.KeepUpload(ctx, session, "m2", cat, b64("meow")), adapters.ErrUploadTaken)
		assert.Equal(t, []StoredMedia{{MessageID: "m2", Media: cat}}, kept(t, s, "m2"))

		// The worker keeps a sound's transcript in place of its bytes.
		voice := pipeline.Media{Kind: "audio", Ref: "upload:room/m3/0", MimeType: "audio/ogg", Name: "memo.ogg"}
		require.NoError(t, s.KeepUpload(ctx, session, "m3", voice, b64("OggS")))
		require.NoError(t, s.SaveMediaContent(ctx, session, "m3", 0, "", "hello there"))
		assert.Equal(t, []StoredMedia{{MessageID: "m3", Media: voice, Transcript: "hello there"}}, kept(t, s, "m3"))
		assert.ErrorIs(t, s.KeepUpload(ctx, session, "m3", voice, b64("OggS")), adapters.ErrUploadTaken)
		assert.Equal(t, []StoredMedia{{MessageID: "m3", Media: voice, Transcript: "hello there"}}, kept(t, s, "m3"))
	})

	t.Run("a keep that failed wrote nothing, and its retry keeps the file", func(t *testing.T) {
		s := open(t, dsn(t))
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		require.Error(t, s.KeepUpload(canceled, session, "m1", cat, b64("meow")))
		assert.Empty(t, kept(t, s, "m1"))
		require.NoError(t, s.KeepUpload(ctx, session, "m1", cat, b64("meow")))
		assert.Equal(t, []StoredMedia{{MessageID: "m1", Media: cat, Content: b64("meow")}}, kept(t, s, "m1"))
	})

	t.Run("sealed bytes are compared as what they open to", func(t *testing.T) {
		s := open(t, dsn(t))
		s.SetSealer(blobs(t, "k1", "one"))
		require.NoError(t, s.KeepUpload(ctx, session, "m1", cat, b64("meow")))
		require.NoError(t, s.KeepUpload(ctx, session, "m1", cat, b64("meow")), "a retry, sealed afresh")
		assert.ErrorIs(t, s.KeepUpload(ctx, session, "m1", cat, b64("woof")), adapters.ErrUploadTaken)
		assert.Equal(t, []StoredMedia{{MessageID: "m1", Media: cat, Content: b64("meow")}}, kept(t, s, "m1"))
	})

	t.Run("of uploads racing from two gateways under one ID, one is kept and the others are taken", func(t *testing.T) {
		d := dsn(t)
		gateways := []*Store{open(t, d), open(t, d)}
		const racers = 8
		errs := make([]error, racers)
		var wg sync.WaitGroup
		for i := range racers {
			wg.Go(func() {
				errs[i] = gateways[i%2].KeepUpload(ctx, session, "m1", cat, b64(fmt.Sprint("bytes of ", i)))
			})
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			if err == nil {
				require.Equal(t, -1, winner, "two uploads were kept: %v", errs)
				winner = i
				continue
			}
			require.True(t, errors.Is(err, adapters.ErrUploadTaken), "racer %d: %v", i, err)
		}
		require.NotEqual(t, -1, winner, "none was kept: %v", errs)
		assert.Equal(t, []StoredMedia{{MessageID: "m1", Media: cat, Content: b64(fmt.Sprint("bytes of ", winner))}}, kept(t, gateways[0], "m1"))
	})
}
