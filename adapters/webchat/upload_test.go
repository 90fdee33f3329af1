package webchat

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

var uploadPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=")

// uploadGateway serves a web chat that keeps uploads in the store at
// dsn, at most max bytes a file, as a gateway with REPLYFLOW_MEDIA does.
func uploadGateway(t testing.TB, dsn string, max int64) (*httptest.Server, *recordingSink, *store.Store) {
	db, err := store.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	sink := &recordingSink{}
	srv, err := NewServer(ServerConfig{Sink: sink, BotToken: token, Auth: AuthNone, ChatLog: db, Uploads: db, MaxUploadBytes: max})
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.CloseStreams()
		ts.Close()
	})
	return ts, sink, db
}

// postUpload posts a multipart upload of fields and one file.
func postUpload(t *testing.T, url string, fields map[string]string, name string, data []byte) (int, string) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, v := range fields {
		require.NoError(t, mw.WriteField(k, v))
	}
	if data != nil {
		fw, err := mw.CreateFormFile("file", name)
		require.NoError(t, err)
		_, err = fw.Write(data)
		require.NoError(t, err)
	}
	require.NoError(t, mw.Close())
	req, err := http.NewRequest(http.MethodPost, url, &body)
	require.NoError(t, err)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// An upload is kept in the store before the message is accepted, the
// message carries it by reference as other platforms' do, the worker's
// client reads it back from the store, and a reloaded page shows its
// name.
func TestAnUploadIsKeptAtIngressSignalledByReferenceAndReadBack(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "store.db")
	ts, sink, db := uploadGateway(t, dsn, 1<<20)
	code, body := postUpload(t, ts.URL+"/api/chats/room/uploads",
		map[string]string{"message_id": "m1", "sender_id": "alice", "text": "what is this?"}, "cat.png", uploadPNG)
	require.Equal(t, http.StatusAccepted, code, body)
	require.Len(t, sink.accepted, 1)
	in := sink.accepted[0]
	file := pipeline.Media{Kind: "photo", Ref: "upload:room/m1/0", MimeType: "image/png", Name: "cat.png"}
	assert.Equal(t, []pipeline.Media{file}, in.Media)
	assert.Equal(t, "what is this?", in.Text)

	sessionID := in.Session().WorkflowID()
	kept, err := db.MessageMedia(context.Background(), sessionID, []string{"m1"})
	require.NoError(t, err)
	require.Len(t, kept["m1"], 1)
	assert.Equal(t, base64.StdEncoding.EncodeToString(uploadPNG), kept["m1"][0].Content, "kept before the session hears of it")

	wc, err := NewClient(ts.URL, token, nil)
	require.NoError(t, err)
	_, err = wc.FetchFile(context.Background(), file, 1<<20)
	assert.ErrorContains(t, err, "has none", "a worker without the store reads nothing")
	wc.SetUploads(db)
	data, err := wc.FetchFile(context.Background(), file, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, uploadPNG, data)
	_, err = wc.FetchFile(context.Background(), file, 10)
	assert.ErrorIs(t, err, adapters.ErrFileTooLarge)
	_, err = wc.FetchFile(context.Background(), pipeline.Media{Kind: "photo", Ref: "upload:room/gone/0"}, 1<<20)
	var perr *adapters.Error
	require.ErrorAs(t, err, &perr)
	assert.Equal(t, adapters.Permanent, perr.Kind, "a file the store no longer keeps is gone for good")

	// A retried upload (same message_id) is the same file, shown once.
	code, body = postUpload(t, ts.URL+"/api/chats/room/uploads",
		map[string]string{"message_id": "m1", "sender_id": "alice", "text": "what is this?"}, "cat.png", uploadPNG)
	require.Equal(t, http.StatusAccepted, code, body)
	assert.Equal(t, []string{`user {"message_id":"m1","sender_id":"alice","text":"what is this?","files":[{"name":"cat.png","content_type":"image/png","size":` +
		strconv.Itoa(len(uploadPNG)) + `}]}`}, history(t, ts.URL, "room"), "a reloaded page shows the file's name, never its bytes")

	// A text file alone, without a caption, is a message too.
	code, body = postUpload(t, ts.URL+"/api/chats/room/uploads", map[string]string{"sender_id": "alice"}, "notes.txt", []byte("buy milk"))
	require.Equal(t, http.StatusAccepted, code, body)
	require.Len(t, sink.accepted, 2, "the retry of an accepted upload is answered without a second signal")
	assert.Equal(t, "document", sink.accepted[1].Media[0].Kind)
	assert.Equal(t, "text/plain", sink.accepted[1].Media[0].MimeType)
}

func TestBadUploadsGet4xxWithAReasonAndKeepNothing(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "store.db")
	ts, sink, db := uploadGateway(t, dsn, 1000)
	url := ts.URL + "/api/chats/room/uploads"
	alice := map[string]string{"sender_id": "alice", "message_id": "m1"}
	cases := []struct {
		name   string
		fields map[string]string
		file   string
		data   []byte
		status int
		reason string
	}{
		{"too large", alice, "big.png", append(append([]byte{}, uploadPNG...), bytes.Repeat([]byte{0}, 1000)...), http.StatusRequestEntityTooLarge, "larger than 1000 bytes"},
		{"svg", alice, "x.svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`), http.StatusUnsupportedMediaType, "image/svg+xml, which the web chat does not take"},
		{"zip named as png", alice, "x.png", []byte("PK\x03\x04\x14\x00\x00\x00zip"), http.StatusUnsupportedMediaType, "application/zip"},
		{"not UTF-8 text", alice, "x.txt", []byte("caf\xe9 \xff\xfe"), http.StatusUnsupportedMediaType, "does not take"},
		{"no file", alice, "", nil, http.StatusBadRequest, "no file"},
		{"unknown field", map[string]string{"sender_id": "alice", "chat_type": "group"}, "a.png", uploadPNG, http.StatusBadRequest, "unknown form field"},
		{"no sender", map[string]string{"text": "hi"}, "a.png", uploadPNG, http.StatusBadRequest, "sender_id is missing"},
	}
	for _, c := range cases {
		code, body := postUpload(t, url, c.fields, c.file, c.data)
		assert.Equal(t, c.status, code, c.name+": "+body)
		assert.Contains(t, body, c.reason, c.name)
	}
	assert.Empty(t, sink.accepted)
	kept, err := db.MessageMedia(context.Background(), pipeline.SessionKey{Channel: Channel, Chat: "room"}.WorkflowID(), []string{"m1"})
	require.NoError(t, err)
	assert.Empty(t, kept["m1"], "nothing refused is kept")

	// A gateway without files refuses uploads, and says how to turn them on.
	plain := newTestServer(t, &recordingSink{})
	code, body := postUpload(t, plain.URL+"/api/chats/room/uploads", alice, "a.png", uploadPNG)
	assert.Equal(t, http.StatusNotImplemented, code)
	assert.Contains(t, body, "REPLYFLOW_MEDIA=true")
}

// Another site's page cannot post an upload in a visitor's browser: a
// multipart form is a simple request, so the cross-origin check stands
// before it, and only the upload route takes one.
func TestUploadsFromAnotherSiteAndMultipartElsewhereAreRefused(t *testing.T) {
	ts, sink, _ := uploadGateway(t, filepath.Join(t.TempDir(), "store.db"), 1<<20)
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	require.NoError(t, mw.WriteField("sender_id", "alice"))
	fw, err := mw.CreateFormFile("file", "a.png")
	require.NoError(t, err)
	_, _ = fw.Write(uploadPNG)
	require.NoError(t, mw.Close())
	for _, c := range []struct {
		path, site string
		status     int
	}{
		{"/api/chats/room/uploads", "cross-site", http.StatusForbidden},
		{"/api/chats/room/messages", "same-origin", http.StatusUnsupportedMediaType},
	} {
		req, err := http.NewRequest(http.MethodPost, ts.URL+c.path, bytes.NewReader(body.Bytes()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Sec-Fetch-Site", c.site)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, c.status, resp.StatusCode, c.path)
	}
	assert.Empty(t, sink.accepted)
}

// postRawUpload posts body as a multipart form with boundary "B".
func postRawUpload(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "multipart/form-data; boundary=B", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// A file's name is a name, never a path: the message keeps it without
// control characters (an escaped NUL included, which PostgreSQL would
// not store), clipped, and what the store keeps is keyed by the chat
// and message, whatever the name says.
func TestUploadedFileNamesAreCleanedAndNeverPaths(t *testing.T) {
	ts, sink, db := uploadGateway(t, filepath.Join(t.TempDir(), "store.db"), 1<<20)
	url := ts.URL + "/api/chats/room/uploads"
	form := func(id, disposition string) string {
		return "--B\r\nContent-Disposition: form-data; name=\"sender_id\"\r\n\r\nalice\r\n" +
			"--B\r\nContent-Disposition: form-data; name=\"message_id\"\r\n\r\n" + id + "\r\n" +
			"--B\r\nContent-Disposition: form-data; name=\"file\"; " + disposition + "\r\nContent-Type: image/png\r\n\r\n%PDF-1.7\n1 0 obj\r\n--B--\r\n"
	}
	for _, c := range []struct {
		id, disposition, name string
	}{
		{"m1", `filename*=UTF-8''a%00b%1B%5B31mc%0D%0Ad.pdf`, "ab[31mcd.pdf"},
		{"m2", `filename="../../../etc/passwd"`, "passwd"},
		{"m3", `filename="..\\..\\report.pdf"`, `..\..\report.pdf`},
		{"m4", `filename="` + strings.Repeat("n", 10_000) + `.pdf"`, strings.Repeat("n", pipeline.MaxNameBytes)},
	} {
		code, body := postRawUpload(t, url, form(c.id, c.disposition))
		require.Equal(t, http.StatusAccepted, code, "%s: %s", c.id, body)
		in := sink.accepted[len(sink.accepted)-1]
		require.Len(t, in.Media, 1)
		assert.Equal(t, pipeline.Media{Kind: "document", Ref: "upload:room/" + c.id + "/0", MimeType: "application/pdf", Name: c.name}, in.Media[0], c.id)
		kept, err := db.MessageMedia(context.Background(), in.Session().WorkflowID(), []string{c.id})
		require.NoError(t, err)
		require.Len(t, kept[c.id], 1)
		assert.Equal(t, c.name, kept[c.id][0].Name, c.id)
	}

	// A raw NUL in the part's header is no form at all.
	code, body := postRawUpload(t, url, form("m5", "filename=\"a\x00b.pdf\""))
	assert.Equal(t, http.StatusBadRequest, code, body)
	assert.Contains(t, body, "the form could not be read")
}

// An SVG is refused however long the prolog before its <svg root (which
// the sniffer reads past in no case: it takes it for plain text); a text
// that is no markup may mention <svg anywhere and is taken.
func TestAnSVGAfterALongPrologIsRefused(t *testing.T) {
	ts, sink, _ := uploadGateway(t, filepath.Join(t.TempDir(), "store.db"), 1<<20)
	url := ts.URL + "/api/chats/room/uploads"
	svg := `<SVG xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`
	for name, data := range map[string]string{
		"blank lines":        strings.Repeat("\n", 5000) + svg,
		"a byte-order mark":  "\xef\xbb\xbf" + strings.Repeat(" ", 2000) + svg,
		"a DOCTYPE's subset": `<!DOCTYPE svg [` + strings.Repeat(`<!ENTITY a "b">`, 200) + `]>` + svg,
	} {
		code, body := postUpload(t, url, map[string]string{"sender_id": "alice"}, "photo.png", []byte(data))
		assert.Equal(t, http.StatusUnsupportedMediaType, code, "%s: %s", name, body)
		assert.Contains(t, body, "the file's bytes are image/svg+xml", name)
	}
	assert.Empty(t, sink.accepted)

	code, body := postUpload(t, url, map[string]string{"sender_id": "alice"}, "notes.txt",
		[]byte(strings.Repeat("notes ", 300)+"and the logo is an <svg> element"))
	assert.Equal(t, http.StatusAccepted, code, body)
}

// A form cut off before its closing delimiter is refused, even after a
// whole file part (what came after it, a caption, is lost), and so is a
// body none of whose lines is the header's boundary: neither is taken
// for a form that simply ended.
func TestACutFormIsRefusedNotTakenAsEnded(t *testing.T) {
	ts, sink, _ := uploadGateway(t, filepath.Join(t.TempDir(), "store.db"), 1<<20)
	url := ts.URL + "/api/chats/room/uploads"
	whole := "--B\r\nContent-Disposition: form-data; name=\"sender_id\"\r\n\r\nalice\r\n" +
		"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\nhello\r\n" +
		"--B\r\nContent-Disposition: form-data; name=\"text\"\r\n\r\nwhat is this?\r\n--B--\r\n"
	for name, body := range map[string]string{
		"cut after the file part":     whole[:strings.Index(whole, "hello\r\n--B\r\n")+len("hello\r\n--B\r\n")],
		"cut in the caption's header": whole[:strings.Index(whole, `name="text"`)+len(`name="te`)],
		"cut in the caption":          whole[:strings.Index(whole, "what is")+len("what is")],
		"another boundary":            strings.ReplaceAll(whole, "--B", "--X"),
	} {
		code, answer := postRawUpload(t, url, body)
		assert.Equal(t, http.StatusBadRequest, code, "%s: %s", name, answer)
		assert.Contains(t, answer, "could not be read", name)
	}
	assert.Empty(t, sink.accepted)
	code, answer := postRawUpload(t, url, whole)
	assert.Equal(t, http.StatusAccepted, code, answer)

	// The closing delimiter is found however the body's reads split it.
	read := func(body string) error {
		req := httptest.NewRequest(http.MethodPost, "/api/chats/room/uploads", io.NopCloser(iotest.OneByteReader(strings.NewReader(body))))
		req.Header.Set("Content-Type", "multipart/form-data; boundary=B")
		_, _, err := readUpload(req, 1<<20)
		return err
	}
	assert.NoError(t, read(whole))
	assert.ErrorContains(t, read(whole[:len(whole)-len("--\r\n")]+"\r\n"), "ends before its closing delimiter")
}

// Sounds are taken as audio, typed by their sniffed container (what a
// browser records is WebM, a voice note Ogg, an .m4a MP4), for the
// worker to transcribe; other sound formats are refused with the reason,
// and a sound is bounded as every file is.
func TestAudioUploadsAreTakenAsAudioAndOtherSoundsRefused(t *testing.T) {
	ts, sink, db := uploadGateway(t, filepath.Join(t.TempDir(), "store.db"), 1000)
	url := ts.URL + "/api/chats/room/uploads"
	webm := "\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\xf7\x81\x01\x42\xf2\x81\x04\x42\xf3\x81\x08\x42\x82\x84webm\x42\x87\x81\x04"
	for i, c := range []struct {
		name, data, mime string
	}{
		{"song.mp3", "ID3\x04\x00\x00\x00\x00\x00\x00frames", "audio/mpeg"},
		{"memo.wav", "RIFF\x24\x00\x00\x00WAVEfmt ", "audio/wav"},
		{"voice.ogg", "OggS\x00\x02\x00\x00opus", "audio/ogg"},
		{"voice-note.webm", webm, "audio/webm"},
		{"memo.m4a", "\x00\x00\x00\x20ftypM4A \x00\x00\x02\x00M4A isommp42\x00\x00\x00\x00", "audio/mp4"},
		{"Voice Memo.m4a", "\x00\x00\x00\x18ftypM4A \x00\x00\x00\x00M4A \x00\x00\x00\x00", "audio/mp4"},
		{"book.m4b", "\x00\x00\x00\x14ftypM4B \x00\x00\x00\x00M4B ", "audio/mp4"},
		{"untagged.mp3", "\xff\xfb\x90\x64\x00\x00\x00\x00frames", "audio/mpeg"},
		{"mpeg2.mp3", "\xff\xf3\x48\xc4\x00\x00\x00\x00frames", "audio/mpeg"},
		{"song.flac", "fLaC\x00\x00\x00\x22\x10\x00\x10\x00", "audio/flac"},
	} {
		id := "a" + strconv.Itoa(i)
		code, body := postUpload(t, url, map[string]string{"sender_id": "alice", "message_id": id}, c.name, []byte(c.data))
		require.Equal(t, http.StatusAccepted, code, "%s: %s", c.name, body)
		in := sink.accepted[len(sink.accepted)-1]
		assert.Equal(t, []pipeline.Media{{Kind: "audio", Ref: "upload:room/" + id + "/0", MimeType: c.mime, Name: c.name}}, in.Media, c.name)
		kept, err := db.MessageMedia(context.Background(), in.Session().WorkflowID(), []string{id})
		require.NoError(t, err)
		require.Len(t, kept[id], 1, c.name)
		assert.Equal(t, base64.StdEncoding.EncodeToString([]byte(c.data)), kept[id][0].Content, "%s: kept for the worker to transcribe", c.name)
	}
	accepted := len(sink.accepted)

	for _, c := range []struct {
		name, data, sniffed string
	}{
		{"tune.aiff", "FORM\x00\x00\x00\x00AIFFCOMM", "audio/aiff"},
		{"tune.mid", "MThd\x00\x00\x00\x06\x00\x01", "audio/midi"},
		{"clip.avi", "RIFF\x24\x00\x00\x00AVI LIST", "video/avi"},
		{"tune.aac", "\xff\xf1\x50\x80\x02\x1f\xfc", "application/octet-stream"},
		{"noise.bin", "\xff\xfb\xf0\x00rest", "application/octet-stream"},
	} {
		code, body := postUpload(t, url, map[string]string{"sender_id": "alice"}, c.name, []byte(c.data))
		assert.Equal(t, http.StatusUnsupportedMediaType, code, "%s: %s", c.name, body)
		assert.Contains(t, body, "the file's bytes are "+c.sniffed+", which the web chat does not take", c.name)
		assert.Contains(t, body, "or a sound (MP3, WAV, Ogg, WebM, M4A, FLAC)", c.name)
	}
	code, body := postUpload(t, url, map[string]string{"sender_id": "alice"}, "long.ogg", append([]byte("OggS\x00"), bytes.Repeat([]byte{1}, 1000)...))
	assert.Equal(t, http.StatusRequestEntityTooLarge, code, body)
	assert.Len(t, sink.accepted, accepted, "nothing refused is accepted")
}
