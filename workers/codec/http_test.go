package codec

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"
)

const uiOrigin = "http://localhost:8080"

func codecServer(t *testing.T, token string) (*httptest.Server, converter.DataConverter) {
	t.Helper()
	keys := []Key{testKey(t, "k1")}
	codecs, err := Codecs(keys, true)
	require.NoError(t, err)
	h, err := NewHandler(codecs, HandlerOptions{Token: token, Origins: []string{uiOrigin + "/"}})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, dataConverter(t, true, keys...)
}

// call posts payloads to path and returns the status, the body, and the
// payloads of a 200 answer.
func call(t *testing.T, req *http.Request) (int, http.Header, string, []*commonpb.Payload) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out commonpb.Payloads
	if resp.StatusCode == http.StatusOK {
		require.NoError(t, protojson.Unmarshal(body, &out), string(body))
	}
	return resp.StatusCode, resp.Header, string(body), out.Payloads
}

func request(t *testing.T, method, url string, payloads []*commonpb.Payload, headers map[string]string) *http.Request {
	t.Helper()
	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: payloads})
	require.NoError(t, err)
	req, err := http.NewRequest(method, url, strings.NewReader(string(body)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return req
}

func TestCodecServerDecodesForTheTokenHolder(t *testing.T) {
	srv, dc := codecServer(t, "s3cret")
	sealed, err := dc.ToPayload(secretText)
	require.NoError(t, err)
	bearer := map[string]string{"Authorization": "Bearer s3cret"}

	code, _, body, out := call(t, request(t, http.MethodPost, srv.URL+"/default/decode", []*commonpb.Payload{sealed}, bearer))
	require.Equal(t, http.StatusOK, code, body)
	require.Len(t, out, 1)
	assert.Equal(t, `"`+secretText+`"`, string(out[0].Data))

	bearer["X-Namespace"] = "default"
	code, _, body, encoded := call(t, request(t, http.MethodPost, srv.URL+"/encode", out, bearer))
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, EncodingEncrypted, string(encoded[0].Metadata[converter.MetadataEncoding]), "encode seals, for the UI's signals")
	var got string
	require.NoError(t, dc.FromPayload(encoded[0], &got))
	assert.Equal(t, secretText, got)
}

func TestCodecServerRefusesWithoutTheToken(t *testing.T) {
	srv, dc := codecServer(t, "s3cret")
	sealed, err := dc.ToPayload(secretText)
	require.NoError(t, err)
	for _, c := range []struct {
		auth, reason string
	}{
		{"", "no Authorization header"},
		{"Basic czNjcmV0", "is not Bearer <token>"},
		{"Bearer wrong", "not the codec server's token (REPLYFLOW_CODEC_TOKEN)"},
		{"Bearer s3cret-and-more", "not the codec server's token"},
	} {
		headers := map[string]string{}
		if c.auth != "" {
			headers["Authorization"] = c.auth
		}
		code, header, body, _ := call(t, request(t, http.MethodPost, srv.URL+"/default/decode", []*commonpb.Payload{sealed}, headers))
		assert.Equal(t, http.StatusUnauthorized, code, c.auth)
		assert.Contains(t, body, c.reason, c.auth)
		assert.NotContains(t, body, "4111", c.auth)
		assert.Contains(t, header.Get("WWW-Authenticate"), "Bearer", c.auth)
	}
}

// The Temporal UI sends no token of its own: with
// TEMPORAL_CODEC_INCLUDE_CREDENTIALS=true it sends the browser's cookies,
// and a browser gets the codec server's by giving the token once at
// /signin.
func TestCodecServerSignsABrowserInForTheUI(t *testing.T) {
	srv, dc := codecServer(t, "s3cret")
	sealed, err := dc.ToPayload(secretText)
	require.NoError(t, err)

	resp, err := http.Get(srv.URL + "/signin")
	require.NoError(t, err)
	page, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(page), `<form method="post" action="/signin">`)
	assert.Empty(t, resp.Cookies(), "a look at the form signs nobody in")

	signIn := func(token string, headers map[string]string) *http.Response {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/signin", strings.NewReader(url.Values{"token": {token}}.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	wrong := signIn("wrong", nil)
	assert.Equal(t, http.StatusUnauthorized, wrong.StatusCode)
	assert.Empty(t, wrong.Cookies())
	elsewhere := signIn("s3cret", map[string]string{"Origin": "http://evil.example"})
	assert.Equal(t, http.StatusForbidden, elsewhere.StatusCode, "a sign-in posted by another site's page")
	assert.Empty(t, elsewhere.Cookies())

	ok := signIn("s3cret", map[string]string{"Origin": srv.URL})
	require.Equal(t, http.StatusOK, ok.StatusCode)
	require.Len(t, ok.Cookies(), 1)
	cookie := ok.Cookies()[0]
	assert.Equal(t, CookieName, cookie.Name)
	assert.True(t, cookie.HttpOnly, "no page's script reads it")
	assert.Equal(t, http.SameSiteStrictMode, cookie.SameSite, "only the codec server's own site sends it")
	assert.NotContains(t, cookie.Value, "s3cret", "the cookie is not the token")

	// The UI's request, as the browser sends it: its origin, the cookie.
	req := request(t, http.MethodPost, srv.URL+"/default/decode", []*commonpb.Payload{sealed}, map[string]string{"Origin": uiOrigin, "X-Namespace": "default"})
	req.AddCookie(cookie)
	code, header, body, out := call(t, req)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, `"`+secretText+`"`, string(out[0].Data))
	assert.Equal(t, "true", header.Get("Access-Control-Allow-Credentials"), "the browser hands the UI an answer to a request with credentials")

	// A new token signs every browser out.
	other, _ := codecServer(t, "another")
	req = request(t, http.MethodPost, other.URL+"/default/decode", []*commonpb.Payload{sealed}, map[string]string{"Origin": uiOrigin})
	req.AddCookie(cookie)
	code, _, body, _ = call(t, req)
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Contains(t, body, "sign in again at /signin")

	open, _ := codecServer(t, "")
	code, _, body, _ = call(t, request(t, http.MethodPost, open.URL+"/signin", nil, nil))
	assert.Equal(t, http.StatusNotFound, code, "without a token there is nothing to sign in to")
	assert.Contains(t, body, "REPLYFLOW_CODEC_TOKEN is not set")
}

func TestCodecServerAnswersTheUIsPreflight(t *testing.T) {
	srv, dc := codecServer(t, "s3cret")
	preflight := request(t, http.MethodOptions, srv.URL+"/default/decode", nil, map[string]string{
		"Origin": uiOrigin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type,x-namespace",
	})
	code, header, _, _ := call(t, preflight)
	assert.Equal(t, http.StatusNoContent, code, "no token is asked of a preflight")
	assert.Equal(t, uiOrigin, header.Get("Access-Control-Allow-Origin"))
	assert.Equal(t, "true", header.Get("Access-Control-Allow-Credentials"))
	assert.Equal(t, "Authorization,Content-Type,X-Namespace,Authorization-Extras", header.Get("Access-Control-Allow-Headers"),
		"what the Temporal UI sends (ui-server v2.42.1: X-Namespace always, Authorization-Extras with a passed access token)")
	assert.Contains(t, header.Get("Access-Control-Allow-Methods"), "POST")

	sealed, err := dc.ToPayload("x")
	require.NoError(t, err)
	code, header, body, _ := call(t, request(t, http.MethodPost, srv.URL+"/decode", []*commonpb.Payload{sealed},
		map[string]string{"Origin": uiOrigin, "Authorization": "Bearer s3cret", "X-Namespace": "default"}))
	assert.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, uiOrigin, header.Get("Access-Control-Allow-Origin"))

	code, header, body, _ = call(t, request(t, http.MethodPost, srv.URL+"/default/decode", []*commonpb.Payload{sealed},
		map[string]string{"Origin": "http://evil.example", "Authorization": "Bearer s3cret"}))
	assert.Equal(t, http.StatusForbidden, code)
	assert.Contains(t, body, "add it with --ui-origin or REPLYFLOW_CODEC_UI_ORIGINS")
	assert.Empty(t, header.Get("Access-Control-Allow-Origin"))
}

func TestCodecServerWithoutTokenAndOtherRoutes(t *testing.T) {
	srv, dc := codecServer(t, "")
	sealed, err := dc.ToPayload("open on loopback")
	require.NoError(t, err)
	code, _, body, out := call(t, request(t, http.MethodPost, srv.URL+"/default/decode", []*commonpb.Payload{sealed}, nil))
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, `"open on loopback"`, string(out[0].Data))

	code, _, _, _ = call(t, request(t, http.MethodPost, srv.URL+"/default/other", nil, nil))
	assert.Equal(t, http.StatusNotFound, code)
	code, _, _, _ = call(t, request(t, http.MethodGet, srv.URL+"/default/decode", nil, nil))
	assert.Equal(t, http.StatusMethodNotAllowed, code)
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/default/decode", strings.NewReader("not json"))
	require.NoError(t, err)
	code, _, _, _ = call(t, req)
	assert.Equal(t, http.StatusBadRequest, code)
}

func TestCheckListenNeedsATokenOffLoopback(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:8089", "localhost:8089", "[::1]:8089", "127.0.0.2:0"} {
		assert.NoError(t, CheckListen(addr, ""), addr)
	}
	for _, addr := range []string{":8089", "0.0.0.0:8089", "10.0.0.5:8089", "example.com:8089"} {
		err := CheckListen(addr, "")
		require.Error(t, err, addr)
		assert.Contains(t, err.Error(), "set REPLYFLOW_CODEC_TOKEN, or listen on a loopback address", addr)
		assert.NoError(t, CheckListen(addr, "token"), addr)
	}
	assert.ErrorContains(t, CheckListen("nonsense", ""), "not host:port")
}

func TestParseOrigin(t *testing.T) {
	got, err := ParseOrigin("HTTP://LocalHost:8233/")
	require.NoError(t, err)
	assert.Equal(t, "http://localhost:8233", got)
	for _, bad := range []string{"localhost:8233", "http://host/path", "ftp://host", "http://", "http://u:p@host"} {
		_, err := ParseOrigin(bad)
		assert.ErrorContains(t, err, "is not scheme://host[:port]", bad)
	}
	_, err = NewHandler(nil, HandlerOptions{Origins: []string{"nope"}})
	assert.Error(t, err)
}

// TestCodecServerAnswers413ForABodyOverTheLimit: with and without a
// declared length, a body over maxRequestBytes is "too large", not "bad".
func TestCodecServerAnswers413ForABodyOverTheLimit(t *testing.T) {
	srv, _ := codecServer(t, "")
	declared, err := http.NewRequest(http.MethodPost, srv.URL+"/default/decode", strings.NewReader(strings.Repeat(" ", maxRequestBytes+1)))
	require.NoError(t, err)
	code, _, body, _ := call(t, declared)
	assert.Equal(t, http.StatusRequestEntityTooLarge, code, body)
	assert.Contains(t, body, "32 MiB")

	// A reader of unknown length is sent chunked: the limit is met while
	// reading.
	chunked, err := http.NewRequest(http.MethodPost, srv.URL+"/default/decode", io.MultiReader(strings.NewReader(strings.Repeat(" ", maxRequestBytes+1))))
	require.NoError(t, err)
	require.Zero(t, chunked.ContentLength, "a body of unknown length, sent chunked")
	code, _, body, _ = call(t, chunked)
	assert.Equal(t, http.StatusRequestEntityTooLarge, code, body)
}

// firstReadSignal tells, on the first Read, that the codec handler has
// begun to read its request: it holds a slot from then on.
type firstReadSignal struct {
	io.ReadCloser
	once    sync.Once
	reading chan<- struct{}
}

func (b *firstReadSignal) Read(p []byte) (int, error) {
	b.once.Do(func() { b.reading <- struct{}{} })
	return b.ReadCloser.Read(p)
}

// TestCodecServerCodesAtMostMaxConcurrentRequestsAtOnce holds every slot
// with requests whose bodies have not arrived yet: one more request waits
// SlotWait, is refused with 503 and Retry-After, and is never read.
func TestCodecServerCodesAtMostMaxConcurrentRequestsAtOnce(t *testing.T) {
	const slots = 2
	keys := []Key{testKey(t, "k1")}
	codecs, err := Codecs(keys, true)
	require.NoError(t, err)
	h, err := NewHandler(codecs, HandlerOptions{MaxConcurrent: slots, SlotWait: 200 * time.Millisecond})
	require.NoError(t, err)
	reading := make(chan struct{}, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = &firstReadSignal{ReadCloser: r.Body, reading: reading}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	sealed, err := dataConverter(t, true, keys...).ToPayload("held")
	require.NoError(t, err)
	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: []*commonpb.Payload{sealed}})
	require.NoError(t, err)

	// Fill every slot with a request whose body is still to come.
	var writers []*io.PipeWriter
	answers := make(chan int, slots)
	for range slots {
		pr, pw := io.Pipe()
		writers = append(writers, pw)
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/default/decode", pr)
		require.NoError(t, err)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answers <- 0
				return
			}
			resp.Body.Close()
			answers <- resp.StatusCode
		}()
		select {
		case <-reading:
		case <-time.After(10 * time.Second):
			t.Fatal("the held request never reached the codec")
		}
	}
	t.Cleanup(func() {
		for _, pw := range writers {
			pw.Close()
		}
	})

	code, header, text, _ := call(t, request(t, http.MethodPost, srv.URL+"/default/decode", []*commonpb.Payload{sealed}, nil))
	assert.Equal(t, http.StatusServiceUnavailable, code, "one request more than the slots is refused: %s", text)
	assert.NotEmpty(t, header.Get("Retry-After"))
	select {
	case <-reading:
		t.Error("the refused request's body was read")
	default:
	}

	// The held requests finish, and the codec serves again.
	for _, pw := range writers {
		_, err := pw.Write(body)
		require.NoError(t, err)
		require.NoError(t, pw.Close())
	}
	for range slots {
		select {
		case code := <-answers:
			assert.Equal(t, http.StatusOK, code)
		case <-time.After(10 * time.Second):
			t.Fatal("a held request never finished")
		}
	}
	code, _, text, out := call(t, request(t, http.MethodPost, srv.URL+"/default/decode", []*commonpb.Payload{sealed}, nil))
	require.Equal(t, http.StatusOK, code, text)
	assert.Equal(t, `"held"`, string(out[0].Data))
}

// TestCodecServerRefusesACompressedPayloadInClear: replyflow compresses
// only before it encrypts, so a payload in clear that says binary/zlib
// comes from no worker; decompressing it would let a caller turn 32 MiB
// into gigabytes (a zlib bomb).
func TestCodecServerRefusesACompressedPayloadInClear(t *testing.T) {
	srv, dc := codecServer(t, "")
	plain, err := converter.GetDefaultDataConverter().ToPayload(strings.Repeat("0", 1<<20))
	require.NoError(t, err)
	bombs, err := converter.NewZlibCodec(converter.ZlibCodecOptions{AlwaysEncode: true}).Encode([]*commonpb.Payload{plain})
	require.NoError(t, err)
	code, _, body, _ := call(t, request(t, http.MethodPost, srv.URL+"/default/decode", bombs, nil))
	assert.Equal(t, http.StatusBadRequest, code, "a compressed payload in clear is not decompressed")
	assert.Contains(t, body, "compressed payload in clear")

	sealed, err := dc.ToPayload(strings.Repeat("0", 1<<20))
	require.NoError(t, err)
	code, _, body, out := call(t, request(t, http.MethodPost, srv.URL+"/default/decode", []*commonpb.Payload{sealed}, nil))
	require.Equal(t, http.StatusOK, code, body)
	assert.Len(t, out[0].Data, 1<<20+2, "one compressed inside its encryption is decoded")
}
