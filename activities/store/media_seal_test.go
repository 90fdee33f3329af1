package store

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workers/codec"
)

func TestMediaSealedAtRestOnSQLite(t *testing.T) {
	mediaSealSuite(t, func(t *testing.T) string { return filepath.Join(t.TempDir(), "store.db") })
}

func TestMediaSealedAtRestOnPostgreSQL(t *testing.T) {
	base := postgresBase(t)
	mediaSealSuite(t, func(t *testing.T) string { return freshDatabase(t, base) })
}

func TestSealedPrefixIsTheCodecs(t *testing.T) {
	assert.Equal(t, codec.BlobPrefix, sealedPrefix)
}

func blobs(t *testing.T, id, seed string) *codec.Blobs {
	t.Helper()
	secret := sha256.Sum256([]byte(seed))
	k, err := codec.NewKey(id, secret[:])
	require.NoError(t, err)
	b, err := codec.NewBlobs([]codec.Key{k})
	require.NoError(t, err)
	return b
}

func mediaSealSuite(t *testing.T, dsn func(*testing.T) string) {
	ctx := context.Background()
	secretBytes := []byte("%PDF-1.7 the quarterly figures: revenue 4111")
	const secretTranscript = "my card number is 4111 1111 1111 1111"
	files := []pipeline.Media{{Kind: "document", Ref: "d1", MimeType: "application/pdf"}, {Kind: "voice", Ref: "v1", MimeType: "audio/ogg"}}

	t.Run("the raw row holds neither the bytes nor the transcript, and they read back", func(t *testing.T) {
		s, err := Open(ctx, dsn(t))
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		s.SetSealer(blobs(t, "k1", "one"))
		require.NoError(t, s.RecordMedia(ctx, "sess", "m1", files))
		require.NoError(t, s.SaveMediaContent(ctx, "sess", "m1", 0, base64.StdEncoding.EncodeToString(secretBytes), ""))
		require.NoError(t, s.SaveMediaContent(ctx, "sess", "m1", 1, "", secretTranscript))

		var content, transcript string
		require.NoError(t, s.db.QueryRowContext(ctx, s.q(`SELECT content FROM inbound_media WHERE seq = 0`)).Scan(&content))
		require.NoError(t, s.db.QueryRowContext(ctx, s.q(`SELECT transcript FROM inbound_media WHERE seq = 1`)).Scan(&transcript))
		for _, raw := range []string{content, transcript} {
			assert.True(t, strings.HasPrefix(raw, "rfenc1:k1:"), raw)
			assert.NotContains(t, raw, "4111")
			assert.NotContains(t, raw, base64.StdEncoding.EncodeToString(secretBytes)[:20])
		}

		got, err := s.MessageMedia(ctx, "sess", []string{"m1"})
		require.NoError(t, err)
		require.Len(t, got["m1"], 2)
		assert.Equal(t, base64.StdEncoding.EncodeToString(secretBytes), got["m1"][0].Content)
		assert.Equal(t, secretTranscript, got["m1"][1].Transcript)
		data, ok, err := s.UploadedFile(ctx, "d1")
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, secretBytes, data, "read back by its reference, as the web chat's files are")
		_, ok, err = s.UploadedFile(ctx, "v1")
		require.NoError(t, err)
		assert.False(t, ok, "a transcript is not a file's bytes")

		// A value moved to another session's row does not open there.
		require.NoError(t, s.RecordMedia(ctx, "other", "m1", files))
		_, err = s.db.ExecContext(ctx, s.q(`UPDATE inbound_media SET transcript = ? WHERE session_id = 'other' AND seq = 1`), transcript)
		require.NoError(t, err)
		_, err = s.MessageMedia(ctx, "other", []string{"m1"})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "of session other")
	})

	t.Run("a wrong key or no key is a clear error naming the session", func(t *testing.T) {
		name := dsn(t)
		s, err := Open(ctx, name)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		s.SetSealer(blobs(t, "k1", "one"))
		require.NoError(t, s.RecordMedia(ctx, "telegram/1/42", "m1", files))
		require.NoError(t, s.SaveMediaContent(ctx, "telegram/1/42", "m1", 1, "", secretTranscript))

		s.SetSealer(blobs(t, "k1", "another secret under the same ID"))
		_, err = s.MessageMedia(ctx, "telegram/1/42", []string{"m1"})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "decrypt the transcript of file 1 of message m1 of session telegram/1/42")
		assert.Contains(t, err.Error(), `key "k1" is not the key it was sealed with`)

		s.SetSealer(blobs(t, "k2", "two"))
		_, err = s.MessageMedia(ctx, "telegram/1/42", []string{"m1"})
		require.ErrorIs(t, err, codec.ErrUnknownKey)

		s.SetSealer(nil)
		_, err = s.MessageMedia(ctx, "telegram/1/42", []string{"m1"})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "of session telegram/1/42: it is encrypted and REPLYFLOW_CODEC_KEYS is not set")
	})

	t.Run("values kept in clear before encryption stay readable", func(t *testing.T) {
		s, err := Open(ctx, dsn(t))
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		require.NoError(t, s.RecordMedia(ctx, "sess", "m1", files))
		require.NoError(t, s.SaveMediaContent(ctx, "sess", "m1", 1, "", "kept in clear"))
		s.SetSealer(blobs(t, "k1", "one"))
		got, err := s.MessageMedia(ctx, "sess", []string{"m1"})
		require.NoError(t, err)
		assert.Equal(t, "kept in clear", got["m1"][1].Transcript)
	})
}
