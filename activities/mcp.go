package activities

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/temporal"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/pipeline"
)

// MCPServerDef declares an MCP server in the MCP file: either a command
// the worker starts and talks to over stdio, or a Streamable HTTP URL.
type MCPServerDef struct {
	// Name prefixes the server's tools ("<name>__<tool>"), so two servers
	// cannot offer the same name.
	Name    string   `json:"name"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
	// Env names the worker's environment variables the command gets; it
	// gets no others but PATH, HOME, LANG and TMPDIR, so the worker's own
	// secrets (model API keys) stay out of a server that does not need
	// them. Values never come from the file.
	Env []string `json:"env"`
	URL string   `json:"url"`
	// Headers are sent with every HTTP request; each value is "env:NAME",
	// read from the worker's environment at connect time.
	Headers map[string]string `json:"headers"`
	// OAuth, on an HTTP server, gets a token by the client credentials
	// grant when the server asks for one (mcp_oauth.go).
	OAuth *MCPOAuth `json:"oauth"`
	// Timeout bounds one call (30s by default).
	Timeout pipeline.Duration `json:"timeout"`
	// Tools overrides what the server's annotations say, per tool (by the
	// server's own name).
	Tools map[string]MCPToolOverride `json:"tools"`
}

// MCPToolOverride relaxes or tightens one tool of a server.
type MCPToolOverride struct {
	// ReadOnly replaces the server's readOnlyHint: a read-only call is
	// made again by Temporal when an attempt fails after it reached the
	// server (up to Attempts); any other is not, as the server may have
	// acted.
	ReadOnly *bool `json:"read_only"`
	// Attempts bounds how often Temporal makes a read-only call
	// (mcpReadOnlyAttempts by default, 1 to 10); a tool that is not
	// read-only is made once, and setting it there is an error.
	Attempts int `json:"attempts"`
	// RequiresApproval replaces the default, which is "not read-only".
	RequiresApproval *bool `json:"requires_approval"`
	// Hidden keeps the tool from the model.
	Hidden bool `json:"hidden"`
}

// mcpFile is the MCP file (REPLYFLOW_MCP_FILE).
type mcpFile struct {
	Servers []MCPServerDef `json:"servers"`
}

// Bounds of the MCP tool source.
const (
	// maxMCPServers and maxMCPTools bound what one file and one server
	// put before the model: each tool's schema costs prompt tokens.
	maxMCPServers = 32
	maxMCPTools   = 128
	// maxToolName is the model providers' limit on a tool's name.
	maxToolName = 64
	// maxMCPSchema and maxMCPDescription bound one tool's input schema (as
	// JSON) and description: a server's list is not the operator's to
	// size, and every turn's prompt carries it.
	maxMCPSchema      = 16 << 10
	maxMCPDescription = 1 << 10
	// mcpConnectTimeout bounds starting or reaching a server and listing
	// its tools.
	mcpConnectTimeout = 30 * time.Second
	// mcpBackoffMax bounds the wait between attempts to reach a server
	// that keeps failing to start.
	mcpBackoffMax = 30 * time.Second
	mcpBackoffMin = 250 * time.Millisecond
	// mcpReadOnlyAttempts is how often Temporal makes a read-only call
	// by default (MCPToolOverride.Attempts), each attempt on the
	// server's connection or a fresh one.
	mcpReadOnlyAttempts = 3
	// maxMCPAttempts bounds what the file may set.
	maxMCPAttempts = 10
	// mcpReconnects bounds the connections one attempt opens when the
	// call never reached the server (a server that died between calls,
	// an HTTP session that expired): making it again then is safe for
	// every tool.
	mcpReconnects = 3
	// mcpErrorType names the failures of MCP calls in Temporal.
	mcpErrorType = "MCPToolError"
)

var (
	mcpServerName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9-]{0,23}$`)
	toolNameBad   = regexp.MustCompile(`[^a-zA-Z0-9_-]`)
)

// mcpTool is one tool of a server as the model sees it.
type mcpTool struct {
	spec             models.Tool
	remote           string // the server's name for it
	readOnly         bool
	requiresApproval bool
	attempts         int // how often Temporal may make a call (1 unless read-only)
}

// MCP holds the worker's connections to its MCP servers. Each worker has
// its own; Close ends them.
type MCP struct {
	servers []*mcpServer
	byName  map[string]*mcpServer
	logger  *slog.Logger
	// ctx lives as long as the MCP: background listings use it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type mcpServer struct {
	def     MCPServerDef
	m       *MCP
	client  *mcp.Client
	secrets []string
	oauth   *mcpOAuth // nil unless the file sets oauth
	// transport makes a new connection's transport; tests replace it.
	transport func() (mcp.Transport, error)

	// connMu makes one connect at a time; mu guards the fields below
	// and is never held while talking to the server.
	connMu   sync.Mutex
	mu       sync.Mutex
	session  *mcp.ClientSession // nil when not connected
	tools    map[string]mcpTool // by prefixed name; replaced whole on each listing
	order    []string
	failures int       // consecutive failed connects
	lastErr  string    // the last failed connect's error, redacted
	retryAt  time.Time // no connect before this, after failures
	busy     bool      // a background connect or listing runs
	closed   bool
}

// LoadMCP reads the MCP file: {"servers": [MCPServerDef...]}. Nothing is
// started until Start. An empty path gives nil (no MCP servers).
func LoadMCP(path string, logger *slog.Logger) (*MCP, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the MCP file (REPLYFLOW_MCP_FILE): %w", err)
	}
	var f mcpFile
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("MCP file %s is not {\"servers\": [...]} as documented: %w", path, err)
	}
	if len(f.Servers) > maxMCPServers {
		return nil, fmt.Errorf("MCP file %s: %d servers, at most %d", path, len(f.Servers), maxMCPServers)
	}
	m := newMCP(logger)
	for i, d := range f.Servers {
		if !mcpServerName.MatchString(d.Name) {
			return nil, fmt.Errorf("MCP file %s: server %d needs a name of letters, digits and '-' (at most 24), got %q", path, i+1, d.Name)
		}
		if m.byName[d.Name] != nil {
			return nil, fmt.Errorf("MCP file %s: server %q is declared twice", path, d.Name)
		}
		if (d.Command == "") == (d.URL == "") {
			return nil, fmt.Errorf("MCP file %s: server %q needs either a command (stdio) or a url (Streamable HTTP)", path, d.Name)
		}
		if d.URL != "" {
			if u, err := url.Parse(d.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
				return nil, fmt.Errorf("MCP file %s: server %q needs an http(s) url", path, d.Name)
			}
		}
		for k, v := range d.Headers {
			if _, ok := strings.CutPrefix(v, "env:"); !ok {
				return nil, fmt.Errorf("MCP file %s: server %q: header %s must be \"env:NAME\": secrets come from the environment, not the file", path, d.Name, k)
			}
		}
		if err := checkMCPOAuth(d); err != nil {
			return nil, fmt.Errorf("MCP file %s: server %q: %w", path, d.Name, err)
		}
		for tool, over := range d.Tools {
			if over.Attempts < 0 || over.Attempts > maxMCPAttempts {
				return nil, fmt.Errorf("MCP file %s: server %q tool %s: attempts is %d, it must be between 1 and %d", path, d.Name, tool, over.Attempts, maxMCPAttempts)
			}
			if over.Attempts > 1 && over.ReadOnly != nil && !*over.ReadOnly {
				return nil, fmt.Errorf("MCP file %s: server %q tool %s: a tool that is not read-only is made once (the server may have acted), so it takes no attempts", path, d.Name, tool)
			}
		}
		if d.Timeout <= 0 {
			d.Timeout = pipeline.Duration(30 * time.Second)
		}
		m.add(d)
	}
	return m, nil
}

func newMCP(logger *slog.Logger) *MCP {
	if logger == nil {
		logger = slog.Default()
	}
	m := &MCP{byName: map[string]*mcpServer{}, logger: logger}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m
}

func (m *MCP) add(d MCPServerDef) *mcpServer {
	s := &mcpServer{def: d, m: m, secrets: mcpSecrets(d)}
	if d.OAuth != nil {
		s.oauth = newMCPOAuth(m.ctx, d.Name, *d.OAuth, m.logger)
	}
	s.client = mcp.NewClient(&mcp.Implementation{Name: "replyflow", Version: "1"}, &mcp.ClientOptions{
		// Handled off the connection's goroutine: listing from here
		// would wait on the connection the notice arrived on.
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { s.relist() },
		Capabilities:           &mcp.ClientCapabilities{},
	})
	s.transport = s.defaultTransport
	m.servers = append(m.servers, s)
	m.byName[d.Name] = s
	return s
}

// Start connects to every server and lists its tools, in parallel, within
// mcpConnectTimeout. A server that cannot be reached is logged and tried
// again when a turn next offers tools.
func (m *MCP) Start(ctx context.Context) {
	if m == nil {
		return
	}
	var wg sync.WaitGroup
	for _, s := range m.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.connected(ctx); err != nil {
				m.logger.Warn("MCP server not reached; its tools are offered once it is", "server", s.def.Name, "error", s.redact(err.Error()))
			}
		}()
	}
	wg.Wait()
}

// Close ends every connection (a stdio server's process with it) and waits
// for background listings.
func (m *MCP) Close() {
	if m == nil {
		return
	}
	m.cancel()
	for _, s := range m.servers {
		s.mu.Lock()
		s.closed = true
		cs := s.session
		s.session = nil
		s.mu.Unlock()
		if cs != nil {
			_ = cs.Close()
		}
	}
	m.wg.Wait()
}

func (s *mcpServer) defaultTransport() (mcp.Transport, error) {
	if s.def.Command != "" {
		cmd := exec.Command(s.def.Command, s.def.Args...)
		cmd.Env = nil
		for _, name := range append([]string{"PATH", "HOME", "LANG", "TMPDIR"}, s.def.Env...) {
			if v, ok := os.LookupEnv(name); ok {
				cmd.Env = append(cmd.Env, name+"="+v)
			}
		}
		if cmd.Env == nil {
			cmd.Env = []string{}
		}
		cmd.Stderr = &stderrLines{s: s}
		return &mcp.CommandTransport{Command: cmd}, nil
	}
	client := &http.Client{Transport: headerTransport{base: http.DefaultTransport, headers: s.def.Headers}}
	t := &mcp.StreamableClientTransport{Endpoint: s.def.URL, HTTPClient: client}
	if s.oauth != nil {
		if err := s.oauth.load(); err != nil {
			return nil, err
		}
		t.OAuthHandler = s.oauth
	}
	return t, nil
}

// stderrLines logs a stdio server's standard error at debug level, line
// by line, each redacted and cut like its errors; the line being read is
// bounded by maxStderrLine.
type stderrLines struct {
	s   *mcpServer
	buf []byte
}

const maxStderrLine = 4 << 10

func (w *stderrLines) Write(p []byte) (int, error) {
	for _, b := range p {
		if b == '\n' || len(w.buf) == maxStderrLine {
			w.flush()
			if b == '\n' {
				continue
			}
		}
		w.buf = append(w.buf, b)
	}
	return len(p), nil
}

func (w *stderrLines) flush() {
	if len(w.buf) > 0 {
		// Debug only: a server may print its callers' arguments.
		w.s.m.logger.Debug("MCP server stderr", "server", w.s.def.Name, "line", w.s.redact(string(w.buf)))
	}
	w.buf = w.buf[:0]
}

// headerTransport adds a server's configured headers, read from the
// environment on each request (a rotated token is picked up).
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			name, _ := strings.CutPrefix(v, "env:")
			req.Header.Set(k, os.Getenv(name))
		}
	}
	return t.base.RoundTrip(req)
}

// mcpSecrets are the values a server's errors must not show: those of the
// environment variables it gets, of its headers and of its OAuth client
// secret, and their words.
func mcpSecrets(d MCPServerDef) []string {
	names := append([]string(nil), d.Env...)
	for _, v := range d.Headers {
		name, _ := strings.CutPrefix(v, "env:")
		names = append(names, name)
	}
	if d.OAuth != nil {
		name, _ := strings.CutPrefix(d.OAuth.ClientSecret, "env:")
		names = append(names, name)
	}
	var out []string
	add := func(v string) {
		// Very short values (a flag, "1") would redact ordinary words.
		if len(v) >= 4 {
			out = append(out, v, url.QueryEscape(v))
		}
	}
	for _, n := range names {
		v := os.Getenv(n)
		add(v)
		for _, w := range strings.Fields(v) {
			add(w)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// redact bounds and redacts a server's text before a model or a log sees
// it; an OAuth server's current secret and tokens are redacted too.
func (s *mcpServer) redact(text string) string {
	return errorExcerpt([]byte(text), s.allSecrets())
}

// allSecrets are the server's secrets and, with OAuth, its current
// secret and tokens, longest first, so a value inside another is not
// left half shown.
func (s *mcpServer) allSecrets() []string {
	secrets := s.secrets
	if s.oauth != nil {
		secrets = append(s.oauth.secrets(), s.secrets...)
		sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	}
	return secrets
}

// connected returns the live session, connecting (and listing the tools)
// when there is none. Consecutive failures to connect wait a bounded
// backoff before the next attempt. Connects are made one at a time per
// server, without holding s.mu, so offering the tools never waits on one.
func (s *mcpServer) connected(ctx context.Context) (*mcp.ClientSession, error) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	s.mu.Lock()
	closed, cs, wait := s.closed, s.session, time.Until(s.retryAt)
	s.mu.Unlock()
	switch {
	case closed:
		return nil, errors.New("the worker is stopping")
	case cs != nil:
		return cs, nil
	case wait > 0:
		s.mu.Lock()
		last := s.lastErr
		s.mu.Unlock()
		return nil, fmt.Errorf("server %s failed to start (%s); next attempt in %s", s.def.Name, last, wait.Round(time.Millisecond))
	}
	cs, tools, order, err := s.connect(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.failures++
		s.lastErr = s.redact(err.Error())
		s.retryAt = time.Now().Add(min(mcpBackoffMax, mcpBackoffMin<<min(s.failures-1, 10)))
		return nil, err
	}
	if s.closed {
		_ = cs.Close()
		return nil, errors.New("the worker is stopping")
	}
	s.failures, s.retryAt = 0, time.Time{}
	s.session, s.tools, s.order = cs, tools, order
	s.m.wg.Add(1)
	go func() {
		// A session that ends (the process exited, the server closed
		// it) is dropped, so the next use starts a new one.
		defer s.m.wg.Done()
		_ = cs.Wait()
		s.drop(cs)
	}()
	return cs, nil
}

// connect starts a session and lists its tools.
func (s *mcpServer) connect(ctx context.Context) (*mcp.ClientSession, map[string]mcpTool, []string, error) {
	ctx, cancel := context.WithTimeout(ctx, mcpConnectTimeout)
	defer cancel()
	t, err := s.transport()
	if err != nil {
		return nil, nil, nil, err
	}
	cs, err := s.client.Connect(ctx, t, nil)
	if ae, ok := asMCPAuth(err); ok {
		return nil, nil, nil, ae
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("connect to MCP server %s: %w", s.def.Name, err)
	}
	tools, order, err := s.list(ctx, cs)
	if err != nil {
		_ = cs.Close()
		return nil, nil, nil, err
	}
	return cs, tools, order, nil
}

// drop forgets cs if it is still the session.
func (s *mcpServer) drop(cs *mcp.ClientSession) {
	s.mu.Lock()
	if s.session == cs {
		s.session = nil
	}
	s.mu.Unlock()
	_ = cs.Close()
}

// list reads the server's tools as the model is offered them.
func (s *mcpServer) list(ctx context.Context, cs *mcp.ClientSession) (map[string]mcpTool, []string, error) {
	tools := map[string]mcpTool{}
	var order []string
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, nil, fmt.Errorf("list the tools of MCP server %s: %w", s.def.Name, err)
		}
		if len(order) == maxMCPTools {
			s.m.logger.Warn("MCP server offers more tools than are passed to the model; the rest are left out", "server", s.def.Name, "kept", maxMCPTools)
			break
		}
		over := s.def.Tools[t.Name]
		if over.Hidden {
			continue
		}
		name := prefixedToolName(s.def.Name, t.Name)
		if _, dup := tools[name]; dup {
			s.m.logger.Warn("MCP tool left out: its name is another's once made valid for the model", "server", s.def.Name, "tool", t.Name)
			continue
		}
		readOnly := t.Annotations != nil && t.Annotations.ReadOnlyHint
		if over.ReadOnly != nil {
			readOnly = *over.ReadOnly
		}
		approval := !readOnly
		if over.RequiresApproval != nil {
			approval = *over.RequiresApproval
		}
		attempts := 1
		switch {
		case readOnly:
			attempts = cmp.Or(over.Attempts, mcpReadOnlyAttempts)
		case over.Attempts > 1:
			s.m.logger.Warn("MCP tool made once although the file asks for more attempts: the server does not say it is read-only (set read_only in the file to let Temporal make it again)", "server", s.def.Name, "tool", t.Name)
		}
		params := map[string]any{}
		raw, err := json.Marshal(t.InputSchema)
		if err == nil && len(raw) > maxMCPSchema {
			s.m.logger.Warn("MCP tool left out: its input schema is too large for every prompt to carry", "server", s.def.Name, "tool", t.Name, "bytes", len(raw), "max", maxMCPSchema)
			continue
		}
		if err == nil {
			_ = json.Unmarshal(raw, &params)
		}
		if params["type"] == nil {
			params["type"] = "object"
		}
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		if len(desc) > maxMCPDescription {
			desc = strings.ToValidUTF8(desc[:maxMCPDescription], "") + "..."
		}
		tools[name] = mcpTool{
			spec:   models.Tool{Name: name, Description: desc, Parameters: params},
			remote: t.Name, readOnly: readOnly, requiresApproval: approval, attempts: attempts,
		}
		order = append(order, name)
	}
	return tools, order, nil
}

// relist lists the tools again after the server said they changed, in the
// background; at most one listing runs per server.
func (s *mcpServer) relist() {
	s.mu.Lock()
	if s.busy || s.closed || s.session == nil {
		s.mu.Unlock()
		return
	}
	s.busy = true
	cs := s.session
	s.m.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.m.wg.Done()
		ctx, cancel := context.WithTimeout(s.m.ctx, mcpConnectTimeout)
		defer cancel()
		tools, order, err := s.list(ctx, cs)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.busy = false
		switch {
		case err != nil:
			s.m.logger.Warn("MCP tools not listed again after a change", "server", s.def.Name, "error", s.redact(err.Error()))
		case s.session == cs:
			s.tools, s.order = tools, order
		}
	}()
}

// reconnectSoon connects in the background a server that has never
// listed its tools, so a later turn offers them.
func (s *mcpServer) reconnectSoon() {
	s.mu.Lock()
	if s.busy || s.closed || s.session != nil || s.tools != nil || time.Now().Before(s.retryAt) {
		s.mu.Unlock()
		return
	}
	s.busy = true
	s.m.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.m.wg.Done()
		_, err := s.connected(s.m.ctx)
		s.mu.Lock()
		s.busy = false
		s.mu.Unlock()
		if err != nil {
			s.m.logger.Warn("MCP server not reached", "server", s.def.Name, "error", s.redact(err.Error()))
		}
	}()
}

// prefixedToolName is "<server>__<tool>" within the providers' rules
// (letters, digits, '_' and '-', at most maxToolName); a longer one keeps
// its start and a hash of the whole.
func prefixedToolName(server, tool string) string {
	name := server + "__" + toolNameBad.ReplaceAllString(tool, "_")
	if len(name) <= maxToolName {
		return name
	}
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	suffix := "_" + hex.EncodeToString(sum[:4])
	return name[:maxToolName-len(suffix)] + suffix
}

// specs are the tools of every server, in the file's order.
func (m *MCP) specs() []models.Tool {
	if m == nil {
		return nil
	}
	var out []models.Tool
	for _, s := range m.servers {
		s.reconnectSoon()
		s.mu.Lock()
		for _, name := range s.order {
			out = append(out, s.tools[name].spec)
		}
		s.mu.Unlock()
	}
	return out
}

// lookup finds the server and tool of a prefixed name.
func (m *MCP) lookup(name string) (*mcpServer, mcpTool, bool) {
	if m == nil {
		return nil, mcpTool{}, false
	}
	server, _, ok := strings.Cut(name, "__")
	if !ok {
		return nil, mcpTool{}, false
	}
	s := m.byName[server]
	if s == nil {
		return nil, mcpTool{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tools[name]
	return s, t, ok
}

// declare fills in an MCP call's approval, attempts, timeout and label
// ("mcp <server>.<tool>", the server's own name for the tool).
func (m *MCP) declare(call *pipeline.ToolCall) {
	s, t, ok := m.lookup(call.Name)
	if !ok {
		return
	}
	call.RequiresApproval, call.Attempts, call.Timeout = t.requiresApproval, t.attempts, s.def.Timeout
	call.Label = "mcp " + s.def.Name + "." + t.remote
}

// errMCPNotSent marks a failure before the call reached the server: it is
// safe to make again, whatever the tool does.
var errMCPNotSent = errors.New("not sent")

// call runs one MCP tool call. A result the tool marks as an error is a
// result the model reads. A failure of the connection under a read-only
// call is retried on a fresh connection; under any other call it is a
// non-retryable error, since the server may have acted.
func (m *MCP) call(ctx context.Context, s *mcpServer, t mcpTool, inv pipeline.ToolInvocation) (out string, isError bool, err error) {
	args := map[string]any{}
	if strings.TrimSpace(inv.Call.Arguments) != "" {
		if err := json.Unmarshal([]byte(inv.Call.Arguments), &args); err != nil {
			return fmt.Sprintf("the arguments are not a JSON object: %v", err), true, nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.def.Timeout.D())
	defer cancel()
	for reconnect := 1; ; reconnect++ {
		res, err := s.callOnce(ctx, t, args)
		if err == nil {
			return s.resultText(res)
		}
		safe := errors.Is(err, errMCPNotSent) || errors.Is(err, mcp.ErrSessionMissing)
		unauthorized := errors.Is(err, errMCPAuth)
		switch {
		case !safe && !mcpConnectionFailure(err):
			// The server answered with a protocol error (unknown tool,
			// bad arguments): the model reads it.
			return s.callFailed(t, err), true, nil
		case safe && !unauthorized && ctx.Err() == nil && reconnect < mcpReconnects:
			// Never reached the server: made again at once on a new
			// connection, whatever the tool does.
		case t.readOnly:
			// Temporal makes it again, as the call's declaration says
			// (Attempts), on this connection or a fresh one.
			return "", false, temporal.NewApplicationError(s.callFailed(t, err), mcpErrorType)
		case !safe:
			// It reached the server, or its time ran out there: the
			// server may have acted.
			return "", false, temporal.NewNonRetryableApplicationError(s.callFailed(t, err)+"; it may have run, so it is not made again", mcpErrorType, nil)
		case unauthorized:
			return "", false, temporal.NewNonRetryableApplicationError(s.callFailed(t, err)+"; the server refused it for want of a token, so it did not run", mcpErrorType, nil)
		default:
			return "", false, temporal.NewNonRetryableApplicationError(s.callFailed(t, err)+"; the server could not be reached, so it did not run", mcpErrorType, nil)
		}
		m.logger.Info("MCP call made on a new connection: the call never reached the server", "server", s.def.Name, "tool", t.remote, "connection", reconnect+1, "error", s.redact(err.Error()))
	}
}

func (s *mcpServer) callFailed(t mcpTool, err error) string {
	return fmt.Sprintf("MCP tool %s failed: %s", t.spec.Name, s.redact(err.Error()))
}

// callOnce makes one attempt; a failure to connect, or a refusal for want
// of a token, wraps errMCPNotSent.
func (s *mcpServer) callOnce(ctx context.Context, t mcpTool, args map[string]any) (*mcp.CallToolResult, error) {
	cs, err := s.connected(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errMCPNotSent, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: t.remote, Arguments: args})
	if ae, ok := asMCPAuth(err); ok {
		// Refused with 401 before it ran, and no token was granted: the
		// connection is sound, and the next call asks for a token again.
		return nil, fmt.Errorf("%w: %w", errMCPNotSent, ae)
	}
	if err != nil && mcpConnectionFailure(err) {
		s.drop(cs)
	}
	return res, err
}

// mcpConnectionFailure says err is the connection's, not an answer of
// the server (a JSON-RPC error: unknown tool, bad arguments).
func mcpConnectionFailure(err error) bool {
	var answered *jsonrpc.Error
	return !errors.As(err, &answered) || answered.Code == mcpRejectedByTransport
}

// mcpRejectedByTransport is the code the SDK's Streamable HTTP client
// gives a request whose HTTP exchange failed (a dropped connection, a
// refused one): not the server's answer, and not proof that the server
// never read the request either.
const mcpRejectedByTransport = -32005

// resultText renders a result for the model, bounded by maxToolOutput.
func (s *mcpServer) resultText(res *mcp.CallToolResult) (string, bool, error) {
	var b strings.Builder
	for _, c := range res.Content {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		switch c := c.(type) {
		case *mcp.TextContent:
			b.WriteString(c.Text)
		case *mcp.ImageContent:
			fmt.Fprintf(&b, "[image %s, %d bytes]", c.MIMEType, len(c.Data))
		case *mcp.AudioContent:
			fmt.Fprintf(&b, "[audio %s, %d bytes]", c.MIMEType, len(c.Data))
		case *mcp.ResourceLink:
			fmt.Fprintf(&b, "[resource %s]", c.URI)
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				b.WriteString(c.Resource.Text)
			} else if c.Resource != nil {
				fmt.Fprintf(&b, "[resource %s]", c.Resource.URI)
			}
		}
		if b.Len() > maxToolOutput {
			break
		}
	}
	if b.Len() == 0 && res.StructuredContent != nil {
		data, _ := json.Marshal(res.StructuredContent)
		b.Write(data)
	}
	out := b.String()
	if res.IsError {
		return s.redact(out), true, nil
	}
	// A successful answer is redacted too (a server that echoes its
	// request hands back its token), but kept whole up to the bound.
	out = redactSecrets(out, s.allSecrets())
	if len(out) > maxToolOutput {
		out = out[:maxToolOutput] + "\n[output truncated]"
	}
	return out, false, nil
}
