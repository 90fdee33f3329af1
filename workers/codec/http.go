package codec

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"
)

// Variables of the codec server, named in its messages.
const (
	EnvToken     = "REPLYFLOW_CODEC_TOKEN"
	EnvUIOrigins = "REPLYFLOW_CODEC_UI_ORIGINS"
)

// CookieName is the cookie a browser signed in at /signin carries. The
// Temporal UI sends it with TEMPORAL_CODEC_INCLUDE_CREDENTIALS=true; the
// UI has no setting for a static token of its own.
const CookieName = "replyflow_codec"

// maxSignInBytes bounds the sign-in form: one token.
const maxSignInBytes = 4 << 10

// maxRequestBytes bounds a request: the UI sends a page of history's
// payloads at a time, each at most Temporal's 2 MB.
const maxRequestBytes = 32 << 20

// DefaultMaxConcurrent requests are read and coded at once. A request in
// a slot holds its body (at most maxRequestBytes) and, while it is coded,
// the payloads parsed from it and their coded copies and answer, a few
// times the body (a payload decompresses only inside an encryption the
// keys vouch for: compressedInClear); so the handler holds at most about
// DefaultMaxConcurrent × 4 × 32 MiB (512 MiB) whatever the number of
// callers, and it frees it when they finish. The Temporal UI asks a page at a time, a few requests
// at once, which wait for a slot rather than fail.
const DefaultMaxConcurrent = 4

// DefaultSlotWait is how long a request waits for a slot before it is
// refused with 503 and Retry-After: long enough for the requests ahead
// of it, at tens of milliseconds a page, short of a client's timeout.
const DefaultSlotWait = 5 * time.Second

// HandlerOptions say who may use the codec over HTTP.
type HandlerOptions struct {
	// Token is the bearer token every request must carry. Empty lets in
	// anyone who can reach the handler: serve it so only on a loopback
	// address (CheckListen).
	Token string
	// Origins are the browser origins (the Temporal UI's, such as
	// http://localhost:8080) allowed to call the handler. A request from
	// any other origin is refused.
	Origins []string
	// MaxConcurrent is how many requests are read and coded at once; 0
	// means DefaultMaxConcurrent.
	MaxConcurrent int
	// SlotWait is how long a request waits for one of those slots
	// before it is refused with 503; 0 means DefaultSlotWait.
	SlotWait time.Duration
}

// handler is the SDK's codec handler behind origin and token checks.
type handler struct {
	mux      *http.ServeMux
	origins  map[string]bool
	tokenSum *[sha256.Size]byte
	// cookieSum is the hash of the sign-in cookie's value, itself an
	// HMAC of the token: the cookie is not the token, and it changes
	// when the token does.
	cookie    string
	cookieSum *[sha256.Size]byte
	// slots holds one element per request being read or coded; its
	// capacity is the most at once.
	slots    chan struct{}
	slotWait time.Duration
}

// NewHandler serves codecs for the Temporal UI and CLI (a "codec
// server"): POST /{namespace}/encode and /{namespace}/decode, or /encode
// and /decode with the namespace in X-Namespace (every namespace uses the
// same keys). It answers CORS preflights for opts.Origins and checks
// "Authorization: Bearer <token>" on everything else, in constant time,
// or the cookie a browser got by giving the token at /signin (a form):
// the Temporal UI sends cookies, not a token of its own.
func NewHandler(codecs []converter.PayloadCodec, opts HandlerOptions) (http.Handler, error) {
	h := &handler{mux: http.NewServeMux(), origins: map[string]bool{}, slotWait: DefaultSlotWait}
	if opts.MaxConcurrent < 0 || opts.SlotWait < 0 {
		return nil, fmt.Errorf("codec handler: MaxConcurrent (%d) and SlotWait (%s) must not be negative", opts.MaxConcurrent, opts.SlotWait)
	}
	h.slots = make(chan struct{}, cmp.Or(opts.MaxConcurrent, DefaultMaxConcurrent))
	if opts.SlotWait > 0 {
		h.slotWait = opts.SlotWait
	}
	for _, o := range opts.Origins {
		origin, err := ParseOrigin(o)
		if err != nil {
			return nil, err
		}
		h.origins[origin] = true
	}
	if opts.Token != "" {
		sum := sha256.Sum256([]byte(opts.Token))
		h.tokenSum = &sum
		mac := hmac.New(sha256.New, []byte(opts.Token))
		mac.Write([]byte("replyflow codec server: a browser signed in"))
		h.cookie = fmt.Sprintf("%x", mac.Sum(nil))
		cookieSum := sha256.Sum256([]byte(h.cookie))
		h.cookieSum = &cookieSum
	}
	sdk := converter.NewPayloadCodecHTTPHandler(codecs...)
	for _, pattern := range []string{"POST /{namespace}/encode", "POST /{namespace}/decode", "POST /encode", "POST /decode"} {
		h.mux.Handle(pattern, sdk)
	}
	return h, nil
}

// ParseOrigin checks a browser origin (scheme://host[:port], nothing
// after) and returns it as browsers send it.
func ParseOrigin(s string) (string, error) {
	u, err := url.Parse(strings.TrimSuffix(strings.TrimSpace(s), "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
		return "", fmt.Errorf("UI origin %q is not scheme://host[:port], such as http://localhost:8080", s)
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/signin" {
		h.signIn(w, r)
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		if !h.origins[strings.ToLower(origin)] {
			http.Error(w, fmt.Sprintf("origin %q may not use this codec server: add it with --ui-origin or %s", origin, EnvUIOrigins), http.StatusForbidden)
			return
		}
		header := w.Header()
		header.Set("Access-Control-Allow-Origin", origin)
		header.Set("Access-Control-Allow-Credentials", "true")
		// Authorization-Extras: the UI adds the user's ID token when it
		// passes an access token; it is allowed, and not checked.
		header.Set("Access-Control-Allow-Headers", "Authorization,Content-Type,X-Namespace,Authorization-Extras")
		header.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
		header.Set("Access-Control-Max-Age", "600")
		header.Add("Vary", "Origin")
	}
	if r.Method == http.MethodOptions {
		// A preflight carries no credentials; the request after it does.
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if reason := h.refusal(r); reason != "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="replyflow codec"`)
		http.Error(w, reason, http.StatusUnauthorized)
		return
	}
	if r.ContentLength > maxRequestBytes {
		tooLarge(w)
		return
	}
	if !h.takeSlot(r.Context()) {
		w.Header().Set("Retry-After", "1")
		http.Error(w, fmt.Sprintf("the codec server is coding %d requests, its most at once, and none finished within %s: retry in a moment", cap(h.slots), h.slotWait), http.StatusServiceUnavailable)
		return
	}
	defer func() { <-h.slots }()
	// The body is read whole here, in the slot, so a too-large one is
	// told apart (413) from a malformed one, which the SDK's handler
	// answers with 400.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	if err != nil {
		var over *http.MaxBytesError
		if errors.As(err, &over) {
			tooLarge(w)
			return
		}
		http.Error(w, "reading the request body failed: "+err.Error(), http.StatusBadRequest)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/decode") && compressedInClear(body) {
		http.Error(w, "a compressed payload in clear (binary/zlib, not encrypted) is refused: replyflow compresses only inside its encryption, and decompressing one from a caller would have no size bound", http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	h.mux.ServeHTTP(w, r)
}

// compressedInClear reports whether a decode request holds a payload
// that says binary/zlib outside any encryption. Decompression has no size
// bound: a compressed payload that decryption vouches for comes from a
// holder of the keys, one in clear from anyone who reaches the handler.
// A body that does not parse is left to the SDK's handler to refuse.
func compressedInClear(body []byte) bool {
	var in commonpb.Payloads
	if protojson.Unmarshal(body, &in) != nil {
		return false
	}
	for _, p := range in.Payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) == "binary/zlib" {
			return true
		}
	}
	return false
}

// takeSlot waits at most slotWait, and no longer than the request, for a
// slot; it reports whether it got one.
func (h *handler) takeSlot(ctx context.Context) bool {
	select {
	case h.slots <- struct{}{}:
		return true
	default:
	}
	wait := time.NewTimer(h.slotWait)
	defer wait.Stop()
	select {
	case h.slots <- struct{}{}:
		return true
	case <-wait.C:
	case <-ctx.Done():
	}
	return false
}

func tooLarge(w http.ResponseWriter) {
	http.Error(w, fmt.Sprintf("the request body is over %d MiB, the codec server's limit: send fewer payloads at a time", maxRequestBytes>>20), http.StatusRequestEntityTooLarge)
}

// signInPage asks for the token; the browser keeps the cookie it gets.
const signInPage = `<!doctype html><meta charset="utf-8"><title>replyflow codec server</title>
<form method="post" action="/signin"><p>The codec server's token (REPLYFLOW_CODEC_TOKEN), so this browser's Temporal UI can decrypt:</p>
<input type="password" name="token" autocomplete="off" autofocus> <button>Sign in</button></form>`

// signIn serves the sign-in form (GET) and takes the token from it
// (POST), answering with the cookie the browser then sends to the codec
// with the UI's requests. The cookie is HttpOnly (no page's script reads
// it) and SameSite=Strict (only pages of the codec server's own site,
// such as the UI on the same host, send it).
func (h *handler) signIn(w http.ResponseWriter, r *http.Request) {
	if h.tokenSum == nil {
		http.Error(w, "this codec server takes no token ("+EnvToken+" is not set), so there is nothing to sign in to", http.StatusNotFound)
		return
	}
	switch r.Method {
	case http.MethodGet:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; form-action 'self'")
		_, _ = io.WriteString(w, signInPage)
		return
	case http.MethodPost:
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "sign in with GET /signin (a form) or POST /signin with token=<"+EnvToken+">", http.StatusMethodNotAllowed)
		return
	}
	// The form is the codec server's own page: a post from another
	// origin is another site's.
	if origin := r.Header.Get("Origin"); origin != "" && !strings.EqualFold(origin, "http://"+r.Host) && !strings.EqualFold(origin, "https://"+r.Host) {
		http.Error(w, fmt.Sprintf("a sign-in posted from %q, not from this codec server's own page, is refused", origin), http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxSignInBytes)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "the sign-in form does not parse: "+err.Error(), http.StatusBadRequest)
		return
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(r.PostForm.Get("token"))))
	if subtle.ConstantTimeCompare(sum[:], h.tokenSum[:]) != 1 {
		http.Error(w, "the token is not the codec server's token ("+EnvToken+")", http.StatusUnauthorized)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: h.cookie, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "Signed in: the Temporal UI in this browser now decrypts through this codec server (with TEMPORAL_CODEC_INCLUDE_CREDENTIALS=true on the UI), until the browser closes or the token changes.\n")
}

// refusal is why r may not use the codec, "" when it may.
func (h *handler) refusal(r *http.Request) string {
	if h.tokenSum == nil {
		return ""
	}
	header := r.Header.Get("Authorization")
	if header == "" {
		if c, err := r.Cookie(CookieName); err == nil {
			sum := sha256.Sum256([]byte(c.Value))
			if subtle.ConstantTimeCompare(sum[:], h.cookieSum[:]) == 1 {
				return ""
			}
			return "the sign-in cookie is not this codec server's (its token changed?): sign in again at /signin"
		}
		return "no Authorization header: send Authorization: Bearer <the codec server's token, " + EnvToken + ">, or sign this browser in at /signin (the Temporal UI then needs TEMPORAL_CODEC_INCLUDE_CREDENTIALS=true)"
	}
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "the Authorization header is not Bearer <token>"
	}
	// Hashes first, so the comparison takes as long whatever the length.
	sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
	if subtle.ConstantTimeCompare(sum[:], h.tokenSum[:]) != 1 {
		return "the bearer token is not the codec server's token (" + EnvToken + ")"
	}
	return ""
}

// CheckListen refuses to serve the codec without a token anywhere but on
// a loopback address: whoever reaches it could decrypt every session.
func CheckListen(addr, token string) error {
	if token != "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("codec server address %q is not host:port: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("the codec server would listen on %s with no token, and anyone who reaches it could decrypt every session: set %s, or listen on a loopback address such as 127.0.0.1:8089", addr, EnvToken)
}
