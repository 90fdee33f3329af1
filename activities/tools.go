package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/pipeline"
)

// maxToolOutput bounds what a tool's answer may put into the prompt (and
// into workflow history).
const maxToolOutput = 16 << 10

// ToolDef declares an HTTP tool in the tools file.
type ToolDef struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
	URL         string         `json:"url"`
	Method      string         `json:"method"`
	// Headers are sent with every call; a value "env:NAME" is read from
	// the environment when the call is made, so secrets stay out of files.
	Headers          map[string]string `json:"headers"`
	Timeout          pipeline.Duration `json:"timeout"`
	RequiresApproval bool              `json:"requires_approval"`
	// Redirects says which redirects a call follows: "same-origin" (the
	// default: the tool's own scheme, host and port, with its headers),
	// "none" (a 3xx is the answer) or "any" (elsewhere too, without the
	// configured headers, which carry the tool's secrets). At most
	// maxToolRedirects are followed.
	Redirects string `json:"redirects"`
	// AllowPrivate lets the tool reach loopback, private, link-local and
	// other non-public addresses (an internal service). Without it those
	// are refused when dialed, so neither a redirect nor a host name that
	// resolves inward reaches a cloud metadata endpoint or a local admin
	// port.
	AllowPrivate bool `json:"allow_private"`
}

// Redirect policies of a tool.
const (
	RedirectsSameOrigin = "same-origin"
	RedirectsNone       = "none"
	RedirectsAny        = "any"
)

// maxToolRedirects bounds the redirects one call follows.
const maxToolRedirects = 5

// maxToolErrorExcerpt bounds how much of a failing tool's answer the model
// reads: enough for an error message, little room for a reflected secret.
const maxToolErrorExcerpt = 300

// Tools is the set of tools offered to the model.
type Tools struct {
	defs  map[string]ToolDef
	order []string
	// public serves tools limited to public addresses, private those with
	// allow_private. Two transports, so a connection one opened to a
	// private address is never reused by the other.
	public, private *http.Client
	// publicAddr says which addresses the public client may dial; tests
	// replace it to stand a loopback server in for a public one.
	publicAddr func(netip.Addr) bool
	// mcp are the tools of MCP servers (mcp.go); nil without any.
	mcp *MCP
}

// WithMCP adds the tools of m's servers to t.
func (t *Tools) WithMCP(m *MCP) *Tools {
	t.mcp = m
	return t
}

// Close ends the connections to MCP servers (stopping stdio servers).
func (t *Tools) Close() {
	if t != nil {
		t.mcp.Close()
	}
}

func newTools() *Tools {
	t := &Tools{defs: map[string]ToolDef{}, publicAddr: func(a netip.Addr) bool { return classifyAddr(a) == "" }}
	t.public = &http.Client{Transport: toolTransport(func(a netip.Addr) bool { return t.publicAddr(a) })}
	t.private = &http.Client{Transport: toolTransport(nil)}
	return t
}

// toolTransport dials directly, never through HTTP(S)_PROXY: through a
// proxy the destination would be the proxy's to resolve, out of reach of
// the address check. With allowed set, every address dialed (after DNS,
// for the first request and each redirect) must pass it.
func toolTransport(allowed func(netip.Addr) bool) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if allowed != nil {
		dialer.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return &refusedDestination{class: "unparsable"}
			}
			if !allowed(ap.Addr()) {
				class := classifyAddr(ap.Addr())
				if class == "" {
					class = "disallowed"
				}
				return &refusedDestination{class: class}
			}
			return nil
		}
	}
	tr.DialContext = dialer.DialContext
	return tr
}

// refusedDestination is a dial refused by a tool's address check.
type refusedDestination struct{ class string }

func (e *refusedDestination) Error() string {
	return "destination is a " + e.class + " address"
}

// nonPublic are ranges beyond netip's own predicates that reach no public
// service: "this network", shared address space (carrier NAT, some cloud
// metadata services), IETF assignments, benchmarking, reserved and
// broadcast, IPv6 site-local and the NAT64 prefixes (which embed an IPv4
// address a gateway would reach).
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("fec0::/10"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
}

// classifyAddr names why a is not a public address, or "" if it is.
func classifyAddr(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return "invalid"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsMulticast():
		return "multicast"
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return "reserved"
		}
	}
	return ""
}

var skipResponse = models.Tool{
	Name:        pipeline.SkipResponseTool,
	Description: "Stay silent this turn: call this instead of answering when no reply is wanted (for example in a group conversation that is not addressed to you).",
	Parameters:  map[string]any{"type": "object", "properties": map[string]any{}},
}

var disengage = models.Tool{
	Name:        pipeline.DisengageTool,
	Description: "Step back from this group conversation: after this, you are woken only when mentioned, replied to or named. Use it when people ask you to stop joining in.",
	Parameters:  map[string]any{"type": "object", "properties": map[string]any{}},
}

// LoadTools reads a tools file: a JSON list of ToolDef. An empty path
// gives only the built-in skip_response.
func LoadTools(path string) (*Tools, error) {
	t := newTools()
	if path == "" {
		return t, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the tools file (REPLYFLOW_TOOLS_FILE): %w", err)
	}
	var defs []ToolDef
	if err := json.Unmarshal(data, &defs); err != nil {
		return nil, fmt.Errorf("tools file %s is not a JSON list of tools: %w", path, err)
	}
	for i, d := range defs {
		switch {
		case d.Name == "" || d.Name == pipeline.SkipResponseTool || d.Name == pipeline.DisengageTool:
			return nil, fmt.Errorf("tools file %s: tool %d needs a name, and not a built-in one (%s, %s)", path, i+1, pipeline.SkipResponseTool, pipeline.DisengageTool)
		case t.defs[d.Name].Name != "":
			return nil, fmt.Errorf("tools file %s: tool %q is declared twice", path, d.Name)
		}
		if u, err := url.Parse(d.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("tools file %s: tool %q needs an http(s) url", path, d.Name)
		}
		switch d.Redirects {
		case "":
			d.Redirects = RedirectsSameOrigin
		case RedirectsSameOrigin, RedirectsNone, RedirectsAny:
		default:
			return nil, fmt.Errorf("tools file %s: tool %q: redirects must be %s, %s or %s, got %q", path, d.Name, RedirectsSameOrigin, RedirectsNone, RedirectsAny, d.Redirects)
		}
		if d.Method == "" {
			d.Method = http.MethodPost
		}
		d.Method = strings.ToUpper(d.Method)
		if d.Timeout <= 0 {
			d.Timeout = pipeline.Duration(30 * time.Second)
		}
		if d.Parameters == nil {
			d.Parameters = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		t.defs[d.Name] = d
		t.order = append(t.order, d.Name)
	}
	return t, nil
}

// specs are the tools as offered to the model, skip_response first.
func (t *Tools) specs() []models.Tool {
	out := []models.Tool{skipResponse, disengage}
	if t == nil {
		return out
	}
	for _, name := range t.order {
		d := t.defs[name]
		out = append(out, models.Tool{Name: d.Name, Description: d.Description, Parameters: d.Parameters})
	}
	for _, spec := range t.mcp.specs() {
		// The tools file's own tool keeps its name: two tools of one
		// name would be refused by the model's provider.
		if _, taken := t.defs[spec.Name]; !taken {
			out = append(out, spec)
		}
	}
	return out
}

// declare fills in what the session needs of a call's tool: whether a
// person approves it, how often and how long Temporal may run it, and
// its name in the UI. An HTTP tool's call is made once (a failing one
// is an answer the model reads, not an activity failure).
func (t *Tools) declare(call *pipeline.ToolCall) {
	if t == nil {
		return
	}
	if d, ok := t.defs[call.Name]; ok {
		call.RequiresApproval, call.Timeout = d.RequiresApproval, d.Timeout
		return
	}
	t.mcp.declare(call)
}

// needsApproval says whether this worker declares call as needing a
// person's approval.
func (t *Tools) needsApproval(call pipeline.ToolCall) bool {
	now := call
	now.RequiresApproval = false
	t.declare(&now)
	return now.RequiresApproval
}

// RunTool runs one tool call and returns its result. A failing tool is a
// result the model reads (IsError), not an activity failure, and the call is
// made once: tools are not assumed idempotent, so each request carries an
// Idempotency-Key header from the turn and call IDs.
//
// A call that needs approval runs only if it was declared so when the
// model asked (the session then ran it only once a person approved): a
// tool this worker knows to need approval, which the asking worker did
// not know (an MCP server that was down, a worker whose tool list is
// stale), is refused, not run unapproved.
func (a *Activities) RunTool(ctx context.Context, inv pipeline.ToolInvocation) (pipeline.ToolResult, error) {
	res := pipeline.ToolResult{CallID: inv.Call.ID, Name: inv.Call.Name}
	if needs := a.Tools.needsApproval(inv.Call); needs && !inv.Call.RequiresApproval {
		a.Logger.Warn("Tool call refused: the tool needs approval, and none was asked for (it was not known when the model asked)",
			"session", inv.Session.WorkflowID(), "turn", inv.TurnID, "tool", inv.Call.Name)
		res.Output, res.IsError = "this tool needs a person's approval, and none was asked for, as the tool was not available when you called it. Call it again to ask for approval.", true
		return res, nil
	}
	var def ToolDef
	if a.Tools != nil {
		def = a.Tools.defs[inv.Call.Name]
	}
	if def.Name == "" && a.Tools != nil {
		if server, tool, ok := a.Tools.mcp.lookup(inv.Call.Name); ok {
			var err error
			res.Output, res.IsError, err = a.Tools.mcp.call(ctx, server, tool, inv)
			if err != nil {
				// Its text is bounded and redacted (callFailed).
				a.Logger.Warn("MCP tool call failed", "session", inv.Session.WorkflowID(), "tool", inv.Call.Name, "error", err)
				return res, err
			}
			if res.IsError {
				a.Logger.Warn("MCP tool answered with an error", "session", inv.Session.WorkflowID(), "tool", inv.Call.Name, "bytes", len(res.Output))
			}
			return a.storeToolResult(ctx, inv, res), nil
		}
	}
	if def.Name == "" {
		res.Output, res.IsError = fmt.Sprintf("there is no tool named %q", inv.Call.Name), true
		return res, nil
	}
	output, err := a.Tools.call(ctx, def, inv)
	var answered *toolAnswerError
	switch {
	case errors.As(err, &answered):
		// The status and size only: the body may reflect the tool's
		// secrets or the user's data.
		a.Logger.Warn("tool call failed", "session", inv.Session.WorkflowID(), "tool", def.Name, "status", answered.status, "bytes", answered.size)
		res.Output, res.IsError = err.Error(), true
	case err != nil:
		a.Logger.Warn("tool call failed", "session", inv.Session.WorkflowID(), "tool", def.Name, "error", err)
		res.Output, res.IsError = err.Error(), true
	default:
		res.Output = output
	}
	return a.storeToolResult(ctx, inv, res), nil
}

// storeToolResult keeps res in the store when the session asks, so that
// history carries a reference rather than the output.
func (a *Activities) storeToolResult(ctx context.Context, inv pipeline.ToolInvocation, res pipeline.ToolResult) pipeline.ToolResult {
	if inv.StoreResult && a.Store != nil {
		// Saved before the activity completes: once the session has the
		// result, the store has it too, for the steps that follow.
		if err := a.Store.SaveToolResult(ctx, inv.Session.WorkflowID(), inv.TurnID, inv.Call.ID, res.Output, res.IsError); err != nil {
			a.Logger.Warn("Tool result not saved; the next model step gets it inline", "session", inv.Session.WorkflowID(), "tool", res.Name, "error", err)
			return res
		}
		res.Stored = true
	}
	return res
}

func (t *Tools) call(ctx context.Context, d ToolDef, inv pipeline.ToolInvocation) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, d.Timeout.D())
	defer cancel()
	args := map[string]any{}
	if strings.TrimSpace(inv.Call.Arguments) != "" {
		if err := json.Unmarshal([]byte(inv.Call.Arguments), &args); err != nil {
			return "", fmt.Errorf("the arguments are not a JSON object: %v", err)
		}
	}
	target, body := d.URL, io.Reader(nil)
	if d.Method == http.MethodGet || d.Method == http.MethodDelete {
		u, _ := url.Parse(d.URL)
		q := u.Query()
		for k := range args {
			// The configured query (an API key, a fixed scope) is the
			// operator's; the model's arguments may not replace it, nor
			// shadow it with a case variant a server may read instead.
			for fixed := range q {
				if strings.EqualFold(k, fixed) {
					return "", fmt.Errorf("the argument %q is fixed by the tool's configuration (as %q) and cannot be set", k, fixed)
				}
			}
		}
		for k, v := range args {
			q.Set(k, fmt.Sprint(v))
		}
		u.RawQuery = q.Encode()
		target = u.String()
	} else {
		payload, _ := json.Marshal(args)
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, d.Method, target, body)
	if err != nil {
		return "", err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Idempotency-Key", inv.TurnID+"/"+inv.Call.ID)
	for k, v := range d.Headers {
		if name, ok := strings.CutPrefix(v, "env:"); ok {
			v = os.Getenv(name)
		}
		req.Header.Set(k, v)
	}
	client := *t.public
	if d.AllowPrivate {
		client = *t.private
	}
	client.CheckRedirect = redirectPolicy(d)
	resp, err := client.Do(req)
	if err != nil {
		var refused *refusedDestination
		if errors.As(err, &refused) {
			// The class, not the address or URL: the model reads this.
			return "", fmt.Errorf("tool %s refused: its %s, which the tool's entry does not allow (set allow_private to reach internal addresses)", d.Name, refused)
		}
		// Not the url.Error's text: its URL may hold the configured
		// query's secrets, and this text goes to the model and history.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return "", fmt.Errorf("tool %s unreachable: %v", d.Name, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxToolOutput+1))
	out := string(data)
	if len(data) > maxToolOutput {
		out = string(data[:maxToolOutput]) + "\n[output truncated]"
	}
	if resp.StatusCode >= 300 {
		return "", &toolAnswerError{tool: d.Name, status: resp.StatusCode, size: len(data), excerpt: errorExcerpt(data, toolSecrets(d, req))}
	}
	return redactSecrets(out, toolSecrets(d, req)), nil
}

// redactSecrets replaces each of secrets (longest first, as toolSecrets
// orders them) in text: a tool that echoes its request (a debug endpoint,
// an error reported with a 2xx) must not hand the model, and so the chat,
// the token it was called with.
func redactSecrets(text string, secrets []string) string {
	for _, v := range secrets {
		text = strings.ReplaceAll(text, v, "[redacted]")
	}
	return text
}

// toolAnswerError is a tool's answer with a failing status. Its text, for
// the model, holds at most maxToolErrorExcerpt bytes of the body, with the
// tool's secrets redacted; size is what was read (at most maxToolOutput+1).
type toolAnswerError struct {
	tool         string
	status, size int
	excerpt      string
}

func (e *toolAnswerError) Error() string {
	return fmt.Sprintf("tool %s answered HTTP %d: %s", e.tool, e.status, e.excerpt)
}

// toolSecrets are the values a tool's answer must not hand to the model:
// its configured header values (and their words, so "Bearer x" hides x)
// and its URL's query values, plain and encoded.
func toolSecrets(d ToolDef, req *http.Request) []string {
	var out []string
	add := func(v string) {
		// Very short values (a flag, "1") would redact ordinary words.
		if len(v) >= 4 {
			out = append(out, v, url.QueryEscape(v))
		}
	}
	for k := range d.Headers {
		v := req.Header.Get(k)
		add(v)
		for _, w := range strings.Fields(v) {
			add(w)
		}
	}
	if u, err := url.Parse(d.URL); err == nil {
		for _, vs := range u.Query() {
			for _, v := range vs {
				add(v)
			}
		}
	}
	// Longest first, so a value containing another is redacted whole.
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// errorExcerpt redacts secrets from a failing answer, then keeps its start,
// cut at a rune boundary. Redacting first means a secret is never half
// shown at the cut.
func errorExcerpt(body []byte, secrets []string) string {
	s := strings.TrimSpace(redactSecrets(string(body), secrets))
	if len(s) <= maxToolErrorExcerpt {
		return s
	}
	cut := maxToolErrorExcerpt
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + " [truncated]"
}

// redirectPolicy applies d.Redirects. Go's client would carry the
// configured headers (an API key in X-Api-Key, say) to any host a tool
// redirects to; off the tool's origin they are removed, or the redirect
// is not followed at all.
func redirectPolicy(d ToolDef) func(req *http.Request, via []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > maxToolRedirects {
			return fmt.Errorf("tool %s redirected more than %d times", d.Name, maxToolRedirects)
		}
		// Go sets Referer to the previous URL, query and all: the tool's
		// API key would go to the redirect's target.
		req.Header.Del("Referer")
		first := via[0].URL
		sameOrigin := req.URL.Scheme == first.Scheme && req.URL.Host == first.Host
		switch {
		case d.Redirects == RedirectsNone:
			return http.ErrUseLastResponse
		case sameOrigin:
			return nil
		case d.Redirects == RedirectsAny:
			for k := range d.Headers {
				req.Header.Del(k)
			}
			return nil
		default:
			return fmt.Errorf("tool %s redirected to another origin (%s://%s), which its redirects setting (%s) does not allow", d.Name, req.URL.Scheme, req.URL.Host, d.Redirects)
		}
	}
}
