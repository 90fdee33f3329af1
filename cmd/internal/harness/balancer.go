package harness

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// TCPBalancer spreads connections over backends round-robin, the way an
// L4 load balancer fronts a Temporal cluster's frontends: a connection is
// tied to one backend for its life, and a backend that refuses a
// connection (a killed node) is skipped for the next. Clients see a dead
// backend as a closed connection and dial again.
type TCPBalancer struct {
	ln       net.Listener
	backends []string
	next     atomic.Uint64
	mu       sync.Mutex
	conns    map[net.Conn]bool
	done     chan struct{}
}

// NewTCPBalancer listens on a free port of 127.0.0.1.
func NewTCPBalancer(backends []string) (*TCPBalancer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &TCPBalancer{ln: ln, backends: backends, conns: map[net.Conn]bool{}, done: make(chan struct{})}
	go b.serve()
	return b, nil
}

// Address is where clients connect.
func (b *TCPBalancer) Address() string { return b.ln.Addr().String() }

// Close stops listening and cuts every connection.
func (b *TCPBalancer) Close() {
	close(b.done)
	b.ln.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	for c := range b.conns {
		c.Close()
	}
}

func (b *TCPBalancer) serve() {
	for {
		client, err := b.ln.Accept()
		if err != nil {
			return
		}
		go b.proxy(client)
	}
}

func (b *TCPBalancer) track(c net.Conn, on bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-b.done:
		return false
	default:
	}
	if on {
		b.conns[c] = true
	} else {
		delete(b.conns, c)
	}
	return true
}

func (b *TCPBalancer) proxy(client net.Conn) {
	defer client.Close()
	start := b.next.Add(1)
	var backend net.Conn
	for i := range b.backends {
		addr := b.backends[(int(start)+i)%len(b.backends)]
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			backend = c
			break
		}
	}
	if backend == nil {
		return
	}
	defer backend.Close()
	if !b.track(client, true) || !b.track(backend, true) {
		return
	}
	defer b.track(client, false)
	defer b.track(backend, false)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// Either side closing ends both: a half-open gRPC connection to a
		// dead node would otherwise hang until keepalive notices.
		dst.Close()
		src.Close()
		done <- struct{}{}
	}
	go pipe(backend, client)
	go pipe(client, backend)
	<-done
	<-done
}

// HTTPBalancer spreads requests over backends round-robin, one request
// at a time, as a load balancer in front of several gateways does: a
// request whose backend refuses the connection goes to the next one
// (nginx's proxy_next_upstream); once a backend took the request, its
// answer, or a 502 when it died before answering, is the answer.
type HTTPBalancer struct {
	backends []string // base URLs
	next     atomic.Uint64
	client   *http.Client
	mu       sync.Mutex
	served   map[string]int
}

// NewHTTPBalancer balances over the base URLs ("http://127.0.0.1:8080").
func NewHTTPBalancer(backends ...string) *HTTPBalancer {
	return &HTTPBalancer{
		backends: backends,
		client:   &http.Client{Timeout: time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		served:   map[string]int{},
	}
}

// Served counts, by backend, the requests it answered.
func (b *HTTPBalancer) Served() map[string]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]int, len(b.served))
	for k, v := range b.served {
		out[k] = v
	}
	return out
}

// maxBalancedBody bounds what the balancer buffers of a request (a
// webhook is a few KiB).
const maxBalancedBody = 4 << 20

func (b *HTTPBalancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBalancedBody))
	if err != nil {
		http.Error(w, "balancer: read the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	start := b.next.Add(1)
	for i := range b.backends {
		backend := b.backends[(int(start)+i)%len(b.backends)]
		req, err := http.NewRequestWithContext(r.Context(), r.Method, backend+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, "balancer: "+err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := b.client.Do(req)
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			continue // refused: nobody took it, the next backend may
		}
		if err != nil {
			http.Error(w, "balancer: the gateway died before answering: "+err.Error(), http.StatusBadGateway)
			return
		}
		b.mu.Lock()
		b.served[backend]++
		b.mu.Unlock()
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
		resp.Body.Close()
		return
	}
	http.Error(w, "balancer: no gateway is up", http.StatusBadGateway)
}
