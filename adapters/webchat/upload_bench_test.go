package webchat

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/replyflow/replyflow/workers/codec"
)

// BenchmarkUpload5MiB is one 5 MiB PNG uploaded, kept in a SQLite store
// (in clear, and encrypted with a codec key) and accepted: what a user
// waits for before the page shows it sent.
func BenchmarkUpload5MiB(b *testing.B) {
	b.Run("clear", func(b *testing.B) { benchmarkUpload(b, false) })
	b.Run("encrypted", func(b *testing.B) { benchmarkUpload(b, true) })
}

func benchmarkUpload(b *testing.B, encrypted bool) {
	ts, _, db := uploadGateway(b, filepath.Join(b.TempDir(), "store.db"), 5<<20)
	if encrypted {
		key, err := codec.GenerateKey("k1")
		if err != nil {
			b.Fatal(err)
		}
		blobs, err := codec.NewBlobs([]codec.Key{key})
		if err != nil {
			b.Fatal(err)
		}
		db.SetSealer(blobs)
	}
	file := append(append([]byte{}, uploadPNG...), bytes.Repeat([]byte("5-MiB-image."), (5<<20-len(uploadPNG))/12)...)
	b.SetBytes(int64(len(file)))
	b.ResetTimer()
	for i := range b.N {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		_ = mw.WriteField("sender_id", "alice")
		_ = mw.WriteField("message_id", fmt.Sprintf("m%d", i))
		fw, _ := mw.CreateFormFile("file", "big.png")
		_, _ = fw.Write(file)
		_ = mw.Close()
		resp, err := http.Post(ts.URL+"/api/chats/room/uploads", mw.FormDataContentType(), &body)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			b.Fatalf("upload answered %d", resp.StatusCode)
		}
	}
}
