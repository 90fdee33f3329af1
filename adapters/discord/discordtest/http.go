package discordtest

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
)

// request is a call being served.
type request struct{ Call }

var versionPrefix = regexp.MustCompile(`^/api(/v\d+)?`)

// stripVersion serves /api/v{n}/… and /api/… as the same routes, as
// Discord does.
func stripVersion(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r2 := r.Clone(r.Context())
		prefix := versionPrefix.FindString(r.URL.Path)
		r2.URL.Path = strings.TrimPrefix(r.URL.Path, prefix)
		if r.URL.RawPath != "" {
			r2.URL.RawPath = strings.TrimPrefix(r.URL.RawPath, versionPrefix.FindString(r.URL.RawPath))
		}
		h.ServeHTTP(w, r2)
	})
}

var pathVars = []string{"channel", "message", "emoji", "guild", "interaction", "token", "application"}

// handler decodes and records a call, checks its token, applies a fault
// queued for it, and runs h under s.mu.
func (s *Server) handler(pattern string, h func(*request) (int, any)) http.Handler {
	route := pattern
	if pattern == "/" {
		route = routeNotFound
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(io.LimitReader(r.Body, maxBody))
		req := &request{Call: Call{Route: route, Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(),
			Raw: raw, Auth: r.Header.Get("Authorization"), Vars: map[string]string{}}}
		for _, v := range pathVars {
			if val := r.PathValue(v); val != "" {
				req.Vars[v] = val
			}
		}
		if isMultipart(r) {
			// A message with files: the JSON is the payload_json part.
			if payload, files, err := readMultipart(r.Header.Get("Content-Type"), raw); err == nil {
				req.Raw, req.Files = payload, files
			}
		}
		var body map[string]any
		if len(req.Raw) > 0 && json.Unmarshal(req.Raw, &body) == nil {
			req.Body = body
		}
		s.mu.Lock()
		req.At = s.Now()
		status, resp, hangUp := s.serve(req, h)
		req.Status = status
		if m, ok := resp.(map[string]any); ok && status >= 400 {
			req.Code, _ = m["code"].(int)
		}
		s.calls = append(s.calls, req.Call)
		s.touch()
		s.mu.Unlock()
		if hangUp {
			hangUpOn(w)
			return
		}
		writeJSON(w, status, resp)
	})
}

// serve runs the call or its fault; s.mu must be held.
func (s *Server) serve(req *request, h func(*request) (int, any)) (status int, resp any, hangUp bool) {
	if needsBotToken(req.Route) && req.Auth != "Bot "+s.Token {
		status, resp = apiError(http.StatusUnauthorized, 0, "401: Unauthorized")
		return status, resp, false
	}
	fault, ok := s.takeFault(req.Call)
	if !ok {
		headers, limited, refused := s.overLimit(req.Call)
		if refused != nil {
			return limited, refused, false
		}
		status, resp = h(req)
		if headers != nil && status < 400 {
			resp = withHeaders{body: resp, headers: headers}
		}
		return status, resp, false
	}
	if fault.Applied {
		h(req)
	}
	if fault.Hangup {
		return 0, nil, true
	}
	status, resp = fault.answer()
	return status, resp, false
}

// needsBotToken: Discord authenticates interaction callbacks and
// webhooks by the token in their path, and /gateway needs none.
func needsBotToken(route string) bool {
	switch route {
	case RouteGateway, RouteCallback, RouteFollowup, RouteWebhookEdit, routeNotFound:
		return false
	}
	return true
}

func hangUpOn(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

func writeJSON(w http.ResponseWriter, status int, resp any) {
	if limited, ok := resp.(rateLimitAnswer); ok {
		for k, v := range limited.headers {
			w.Header().Set(k, v)
		}
		resp = limited.body
	} else if bucket, ok := resp.(withHeaders); ok {
		for k, v := range bucket.headers {
			w.Header().Set(k, v)
		}
		resp = bucket.body
	} else if status < 400 {
		// Discord names each route's bucket on every answer; discordgo
		// reads these and would wait when Remaining reached 0.
		w.Header().Set("X-RateLimit-Limit", "5")
		w.Header().Set("X-RateLimit-Remaining", "4")
		w.Header().Set("X-RateLimit-Reset-After", "1.000")
	}
	if status == http.StatusNoContent || resp == nil {
		w.WriteHeader(cmpStatus(status, http.StatusNoContent))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(resp)
}

func cmpStatus(status, def int) int {
	if status == 0 {
		return def
	}
	return status
}

// apiError is Discord's JSON error body.
func apiError(status, code int, message string) (int, any) {
	return status, map[string]any{"message": message, "code": code}
}

// formError is Discord's 50035 Invalid Form Body naming the field.
func formError(field, code, message string) (int, any) {
	return http.StatusBadRequest, map[string]any{"message": "Invalid Form Body", "code": 50035,
		"errors": map[string]any{field: map[string]any{"_errors": []map[string]string{{"code": code, "message": message}}}}}
}
