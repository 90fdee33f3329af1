package webchat

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"
)

// The web chat keeps its event streams (who reads which chat) in the
// memory of the gateway that serves them, and the worker delivers every
// reply to one address, REPLYFLOW_WEBCHAT_URL. Two gateways serving the
// web chat would each hold some readers while the worker posts to one of
// them: the other's readers would miss their replies, and nothing would
// say so. So a gateway that serves the web chat checks, at start and then
// every SingleHostCheckEvery, that REPLYFLOW_WEBCHAT_URL leads to itself,
// and stops when another gateway answers there. (Several gateways are for
// the webhook platforms; the web chat runs on one of them.)

// SingleHostCheckEvery is how often a gateway checks that the worker's
// web chat URL still leads to it.
const SingleHostCheckEvery = 30 * time.Second

// instanceAnswer is GET /bot/instance's body.
type instanceAnswer struct {
	Instance string `json:"instance"`
}

// getInstance answers who this gateway is, to a caller with the bot token.
func (s *Server) getInstance(w http.ResponseWriter, r *http.Request) {
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+s.cfg.BotToken)) != 1 {
		writeError(w, http.StatusUnauthorized, "bot token missing or wrong: the worker and the gateway need the same REPLYFLOW_WEBCHAT_BOT_TOKEN")
		return
	}
	writeJSON(w, http.StatusOK, instanceAnswer{Instance: s.instance})
}

// ErrAnotherHost is what a gateway stops with when the web chat URL leads
// to another gateway.
var ErrAnotherHost = errors.New("another gateway serves the web chat")

// singleHost checks that the web chat URL leads to this gateway.
type singleHost struct {
	url, token, instance string
	every                time.Duration
	logger               *slog.Logger
	client               *http.Client
}

// watch checks until ctx ends, and returns the error to stop the gateway
// with when another gateway answers at the URL (nil when ctx ended
// first). An unreachable URL is logged, not fatal: the worker cannot
// deliver there either, and says so in its own logs.
func (h *singleHost) watch(ctx context.Context) error {
	// The gateway's HTTP server starts listening right after the platforms
	// mounted their routes: the first checks wait for it.
	const startWithin = 10 * time.Second
	started := time.Now()
	wait := 200 * time.Millisecond
	warned := ""
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		other, err := h.check(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil && other == "":
			wait, warned = h.every, ""
		case err == nil:
			return fmt.Errorf("%w: REPLYFLOW_WEBCHAT_URL (%s) leads to gateway %s, not to this one (%s). The web chat keeps its readers in one gateway's memory and the worker delivers to that URL, so this gateway's readers would never see their replies: serve the web chat from one gateway only (REPLYFLOW_WEBCHAT_ENABLED=false on the others), and point REPLYFLOW_WEBCHAT_URL at it, not at a balancer in front of several",
				ErrAnotherHost, h.url, other, h.instance)
		case time.Since(started) < startWithin:
			wait = 500 * time.Millisecond
		default:
			if err.Error() != warned {
				h.logger.Warn("Cannot check that the web chat URL leads to this gateway; the worker delivers replies there (REPLYFLOW_WEBCHAT_URL)",
					"url", h.url, "error", err, "again_in", h.every)
				warned = err.Error()
			}
			wait = h.every
		}
	}
}

// check asks the URL who it is: "" when it is this gateway, else the
// other one's instance.
func (h *singleHost) check(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.url+"/bot/instance", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+h.token)
	resp, err := h.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized:
		// Whatever answers there refuses the bot token the worker
		// delivers with: it is not this gateway, and replies are lost.
		return "with another REPLYFLOW_WEBCHAT_BOT_TOKEN", nil
	default:
		return "", fmt.Errorf("GET /bot/instance answered %s", resp.Status)
	}
	var a instanceAnswer
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 4096)).Decode(&a); err != nil || a.Instance == "" {
		return "", fmt.Errorf("GET /bot/instance answered no instance: %v", err)
	}
	if a.Instance == h.instance {
		return "", nil
	}
	return a.Instance, nil
}
