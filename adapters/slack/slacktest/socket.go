package slacktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Envelope is one Socket Mode message the fake sends, as sent last.
type Envelope struct {
	Type                   string          `json:"type"` // "events_api" or "interactive"
	EnvelopeID             string          `json:"envelope_id"`
	Payload                json.RawMessage `json:"payload"`
	AcceptsResponsePayload bool            `json:"accepts_response_payload"`
	RetryAttempt           int             `json:"retry_attempt"`
	RetryReason            string          `json:"retry_reason"`
}

// Ack is an envelope's acknowledgement from the client.
type Ack struct {
	EnvelopeID string          `json:"envelope_id"`
	Payload    json.RawMessage `json:"payload,omitempty"`
}

type pendingEnvelope struct {
	env    Envelope
	sentAt time.Time // zero until sent
	acked  bool
}

type socketConn struct {
	ws      *websocket.Conn
	writeMu sync.Mutex
	closed  chan struct{}
}

func (c *socketConn) write(v any) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.ws.WriteJSON(v)
}

// socketState is Socket Mode's part of the fake; guarded by Server.mu.
type socketState struct {
	tickets   map[string]bool // URLs handed out and not yet used
	conns     []*socketConn   // open, oldest first; envelopes go to the newest
	opened    int             // connections ever opened
	envelopes []*pendingEnvelope
	acks      []Ack
	silent    bool
	kick      chan struct{}
}

func (st *socketState) init() {
	st.tickets = map[string]bool{}
	st.kick = make(chan struct{}, 1)
}

// openSocketURL hands out a one-use WebSocket URL; s.mu must be held.
func (s *Server) openSocketURL() string {
	s.nextID++
	ticket := strconv.Itoa(s.nextID)
	s.socket.tickets[ticket] = true
	return "ws" + strings.TrimPrefix(s.http.URL, "http") + "/socket?ticket=" + ticket
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) serveSocket(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	s.mu.Lock()
	valid := s.socket.tickets[ticket]
	delete(s.socket.tickets, ticket)
	s.mu.Unlock()
	if !valid {
		http.Error(w, "unknown or used ticket; call apps.connections.open", http.StatusUnauthorized)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &socketConn{ws: ws, closed: make(chan struct{})}
	s.mu.Lock()
	s.socket.conns = append(s.socket.conns, c)
	s.socket.opened++
	n := len(s.socket.conns)
	s.touch()
	s.mu.Unlock()
	hello := map[string]any{"type": "hello", "num_connections": n,
		"connection_info": map[string]string{"app_id": s.AppID},
		"debug_info":      map[string]any{"host": "slacktest", "approximate_connection_time": 18060}}
	if c.write(hello) == nil {
		s.kickDelivery()
		go s.ping(c)
		s.readAcks(c)
	}
	s.dropConn(c)
}

// readAcks records the client's acks until the connection ends.
func (s *Server) readAcks(c *socketConn) {
	for {
		var ack Ack
		if err := c.ws.ReadJSON(&ack); err != nil {
			return
		}
		s.mu.Lock()
		s.socket.acks = append(s.socket.acks, ack)
		for _, p := range s.socket.envelopes {
			if p.env.EnvelopeID == ack.EnvelopeID {
				p.acked = true
			}
		}
		s.touch()
		s.mu.Unlock()
	}
}

// ping pings the connection every PingInterval unless the fake is silent.
func (s *Server) ping(c *socketConn) {
	t := time.NewTicker(s.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-c.closed:
			return
		case <-t.C:
		}
		s.mu.Lock()
		silent := s.socket.silent
		s.mu.Unlock()
		if silent {
			continue
		}
		c.writeMu.Lock()
		err := c.ws.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(5*time.Second))
		c.writeMu.Unlock()
		if err != nil {
			return
		}
	}
}

func (s *Server) dropConn(c *socketConn) {
	s.mu.Lock()
	if i := slices.Index(s.socket.conns, c); i >= 0 {
		s.socket.conns = slices.Delete(s.socket.conns, i, i+1)
		close(c.closed)
		s.touch()
	}
	s.mu.Unlock()
	_ = c.ws.Close()
}

// DropConnections closes every open socket without a word, as a lost
// network does; unacked envelopes are sent again on the next socket.
func (s *Server) DropConnections() { s.closeSockets() }

func (s *Server) closeSockets() {
	s.mu.Lock()
	conns := slices.Clone(s.socket.conns)
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.ws.Close()
	}
}

// Silence stops (true) or resumes (false) the pings, as a connection
// Slack has silently lost; the client's health check should reconnect.
func (s *Server) Silence(silent bool) {
	s.mu.Lock()
	s.socket.silent = silent
	s.mu.Unlock()
}

// Disconnect sends Slack's disconnect message (reason such as
// "refresh_requested" or "warning") on every open socket.
func (s *Server) Disconnect(reason string) {
	s.mu.Lock()
	conns := slices.Clone(s.socket.conns)
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.write(map[string]any{"type": "disconnect", "reason": reason, "debug_info": map[string]string{"host": "slacktest"}})
	}
}

// Connections are the open sockets; Opened the sockets ever opened.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.socket.conns)
}

// Opened counts the sockets ever opened.
func (s *Server) Opened() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.socket.opened
}

// Acks are the acks received, in order (a redelivered envelope may be
// acked more than once).
func (s *Server) Acks() []Ack {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.socket.acks)
}

// Acked says whether the envelope was acked.
func (s *Server) Acked(envelopeID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.socket.acks {
		if a.EnvelopeID == envelopeID {
			return true
		}
	}
	return false
}

// Envelopes are the envelopes queued, each as sent last.
func (s *Server) Envelopes() []Envelope {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Envelope
	for _, p := range s.socket.envelopes {
		out = append(out, p.env)
	}
	return out
}

// enqueue queues an envelope for the socket and returns its ID.
func (s *Server) enqueue(typ string, payload []byte, acceptsResponse bool) string {
	s.mu.Lock()
	s.nextID++
	id := fmt.Sprintf("env-%d", s.nextID)
	s.socket.envelopes = append(s.socket.envelopes, &pendingEnvelope{env: Envelope{Type: typ, EnvelopeID: id, Payload: payload, AcceptsResponsePayload: acceptsResponse}})
	s.touch()
	s.mu.Unlock()
	s.kickDelivery()
	return id
}

func (s *Server) kickDelivery() {
	select {
	case s.socket.kick <- struct{}{}:
	default:
	}
}

// redeliverLoop sends queued envelopes to the newest socket, and sends
// again those not acked within AckTimeout, MaxRetries times at most.
func (s *Server) redeliverLoop() {
	t := time.NewTicker(s.AckTimeout / 4)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-s.socket.kick:
		case <-t.C:
		}
		s.deliverDue()
	}
}

func (s *Server) deliverDue() {
	s.mu.Lock()
	if len(s.socket.conns) == 0 {
		s.mu.Unlock()
		return
	}
	conn := s.socket.conns[len(s.socket.conns)-1]
	now := time.Now()
	var due []Envelope
	for _, p := range s.socket.envelopes {
		switch {
		case p.acked:
		case p.sentAt.IsZero():
			p.sentAt = now
			due = append(due, p.env)
		case now.Sub(p.sentAt) >= s.AckTimeout && p.env.RetryAttempt < s.MaxRetries:
			p.env.RetryAttempt++
			p.env.RetryReason = "timeout"
			p.sentAt = now
			due = append(due, p.env)
		}
	}
	if len(due) > 0 {
		s.touch()
	}
	s.mu.Unlock()
	for _, env := range due {
		if conn.write(env) != nil {
			return // the socket is gone; the envelope is due again after AckTimeout
		}
	}
}
