package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

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
}

// Redirect policies of a tool.
const (
	RedirectsSameOrigin = "same-origin"
	RedirectsNone       = "none"
	RedirectsAny        = "any"
)

// maxToolRedirects bounds the redirects one call follows.
const maxToolRedirects = 5

// Tools is the set of tools offered to the model.
type Tools struct {
	defs   map[string]ToolDef
	order  []string
	client *http.Client
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
	t := &Tools{defs: map[string]ToolDef{}, client: &http.Client{}}
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
	return out
}

func (t *Tools) requiresApproval(name string) bool {
	return t != nil && t.defs[name].RequiresApproval
}

// RunTool runs one tool call and returns its result. A failing tool is a
// result the model reads (IsError), not an activity failure, and the call is
// made once: tools are not assumed idempotent, so each request carries an
// Idempotency-Key header from the turn and call IDs.
func (a *Activities) RunTool(ctx context.Context, inv pipeline.ToolInvocation) (pipeline.ToolResult, error) {
	res := pipeline.ToolResult{CallID: inv.Call.ID, Name: inv.Call.Name}
	var def ToolDef
	if a.Tools != nil {
		def = a.Tools.defs[inv.Call.Name]
	}
	if def.Name == "" {
		res.Output, res.IsError = fmt.Sprintf("there is no tool named %q", inv.Call.Name), true
		return res, nil
	}
	output, err := a.Tools.call(ctx, def, inv)
	if err != nil {
		a.Logger.Warn("tool call failed", "session", inv.Session.WorkflowID(), "tool", def.Name, "error", err)
		res.Output, res.IsError = err.Error(), true
	} else {
		res.Output = output
	}
	if inv.StoreResult && a.Store != nil {
		// Saved before the activity completes: once the session has the
		// result, the store has it too, for the steps that follow.
		if err := a.Store.SaveToolResult(ctx, inv.Session.WorkflowID(), inv.TurnID, inv.Call.ID, res.Output, res.IsError); err != nil {
			a.Logger.Warn("Tool result not saved; the next model step gets it inline", "session", inv.Session.WorkflowID(), "tool", def.Name, "error", err)
			return res, nil
		}
		res.Stored = true
	}
	return res, nil
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
		for k, v := range args {
			// The configured query (an API key, a fixed scope) is the
			// operator's; the model's arguments may not replace it.
			if q.Has(k) {
				return "", fmt.Errorf("the argument %q is fixed by the tool's configuration and cannot be set", k)
			}
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
	client := *t.client
	client.CheckRedirect = redirectPolicy(d)
	resp, err := client.Do(req)
	if err != nil {
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
		return "", fmt.Errorf("tool %s answered HTTP %d: %s", d.Name, resp.StatusCode, strings.TrimSpace(out))
	}
	return out, nil
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
