package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/replyflow/replyflow/adapters"
)

// Status is what GET /healthz answers: the state of each platform the
// gateway serves, so an operator sees which one is down while the others
// keep working. It holds one entry per enabled platform.
type Status struct {
	mu        sync.Mutex
	platforms map[string]adapters.Health
}

var _ adapters.HealthReporter = (*Status)(nil)

// NewStatus is an empty Status.
func NewStatus() *Status {
	return &Status{platforms: map[string]adapters.Health{}}
}

// Report records a platform's state.
func (s *Status) Report(channel string, h adapters.Health) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.platforms[channel] = h
}

// ServeHTTP answers 200 while the gateway serves at all: one platform
// being down is no reason to restart the gateway and take the others
// down too. The body says which platform is in which state.
func (s *Status) ServeHTTP(w http.ResponseWriter, _ *http.Request) { s.serve(w, true) }

// Public is ServeHTTP for an address anyone may reach: each platform's
// state and attempts, and its last error (which may hold an address or
// the platform's own words) only for a request that detail approves.
func (s *Status) Public(detail func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serve(w, detail(r)) })
}

func (s *Status) serve(w http.ResponseWriter, withErrors bool) {
	s.mu.Lock()
	platforms := make(map[string]adapters.Health, len(s.platforms))
	for channel, h := range s.platforms {
		if !withErrors {
			h.Error = ""
		}
		platforms[channel] = h
	}
	s.mu.Unlock()
	body, err := json.Marshal(map[string]any{"platforms": platforms})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(body, '\n'))
}

// Ready is the platforms' readiness check: every enabled platform's
// connection is up (a platform still connecting, or failed, is named).
func (s *Status) Ready(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var down []string
	for channel, h := range s.platforms {
		if h.State != adapters.StateUp {
			down = append(down, channel+" is "+h.State)
		}
	}
	if len(down) == 0 {
		return nil
	}
	sort.Strings(down)
	return errors.New(strings.Join(down, ", "))
}
