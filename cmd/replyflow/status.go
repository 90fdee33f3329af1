package main

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// Platform states the gateway reports on GET /healthz.
const (
	platformUp         = "up"
	platformConnecting = "connecting"
	platformFailed     = "failed"
)

// platformState is one platform connection as GET /healthz shows it.
type platformState struct {
	State string `json:"state"`
	// Error is the last failure while connecting; Attempts counts them,
	// and NextAttemptAt is when the next one starts.
	Error         string     `json:"error,omitempty"`
	Attempts      int        `json:"attempts,omitempty"`
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
}

// gatewayStatus is what GET /healthz answers: the state of each platform
// the gateway serves, so an operator sees which one is down while the
// others keep working. It holds one entry per enabled platform.
type gatewayStatus struct {
	mu        sync.Mutex
	platforms map[string]platformState
}

func newGatewayStatus() *gatewayStatus {
	return &gatewayStatus{platforms: map[string]platformState{}}
}

func (s *gatewayStatus) set(platform string, st platformState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.platforms[platform] = st
}

// ServeHTTP answers 200 while the gateway serves at all: one platform
// being down is no reason to restart the gateway and take the others
// down too. The body says which platform is in which state.
func (s *gatewayStatus) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	body, err := json.Marshal(map[string]any{"platforms": s.platforms})
	s.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(body, '\n'))
}
