package webchat

import (
	"net/http"
	"slices"
)

// corsHeaders lets the pages of exactly the trusted origins
// (REPLYFLOW_WEBCHAT_ORIGINS) call the user API from a browser, with their
// credentials; any other origin gets no CORS header at all, so a browser
// keeps the answers from its page. It answers a preflight itself (true).
func (s *Server) corsHeaders(w http.ResponseWriter, r *http.Request) (answered bool) {
	if len(s.cfg.TrustedOrigins) == 0 {
		return false
	}
	h := w.Header()
	// The answer depends on the Origin, so a cache must keep them apart.
	h.Add("Vary", "Origin")
	origin := r.Header.Get("Origin")
	if origin == "" || !slices.Contains(s.cfg.TrustedOrigins, origin) {
		return false
	}
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Credentials", "true")
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	h.Set("Access-Control-Allow-Methods", "GET, POST")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
}
