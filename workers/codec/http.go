package codec

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"go.temporal.io/sdk/converter"
)

// Variables of the codec server, named in its messages.
const (
	EnvToken     = "REPLYFLOW_CODEC_TOKEN"
	EnvUIOrigins = "REPLYFLOW_CODEC_UI_ORIGINS"
)

// maxRequestBytes bounds a request: the UI sends a page of history's
// payloads at a time, each at most Temporal's 2 MB.
const maxRequestBytes = 32 << 20

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
}

// handler is the SDK's codec handler behind origin and token checks.
type handler struct {
	mux      *http.ServeMux
	origins  map[string]bool
	tokenSum *[sha256.Size]byte
}

// NewHandler serves codecs for the Temporal UI and CLI (a "codec
// server"): POST /{namespace}/encode and /{namespace}/decode, or /encode
// and /decode with the namespace in X-Namespace (every namespace uses the
// same keys). It answers CORS preflights for opts.Origins and checks
// "Authorization: Bearer <token>" on everything else, in constant time.
func NewHandler(codecs []converter.PayloadCodec, opts HandlerOptions) (http.Handler, error) {
	h := &handler{mux: http.NewServeMux(), origins: map[string]bool{}}
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
	r.Body = http.MaxBytesReader(w, r.Body, maxRequestBytes)
	h.mux.ServeHTTP(w, r)
}

// refusal is why r may not use the codec, "" when it may.
func (h *handler) refusal(r *http.Request) string {
	if h.tokenSum == nil {
		return ""
	}
	header := r.Header.Get("Authorization")
	if header == "" {
		return "no Authorization header: send Authorization: Bearer <the codec server's token, " + EnvToken + ">"
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
