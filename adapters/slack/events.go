package slack

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
)

// MaxRequestBody bounds one Events API or interactivity request; Slack's
// are a few KiB, a message with many blocks some tens.
const MaxRequestBody = 1 << 20

// Paths the gateway mounts the handlers on.
const (
	EventsPath        = "/slack/events"
	InteractivityPath = "/slack/interactivity"
)

// EventsHandler serves the Events API Request URL. In order: a request
// without a good signature gets 401 with the reason, one over
// MaxRequestBody 413, a signed one that is not JSON 415,
// url_verification is answered with its challenge, a
// body that is not a JSON object with a type 400. 200 is answered only
// after the sink accepted the event (or the gateway's rate limits dropped
// it, on purpose), 503 otherwise, and Slack delivers it
// again (X-Slack-Retry-Num); a redelivery takes the same path, and the
// session's dedupe drops it by its MessageID. A message, app_mention or
// reaction_added event slack-go cannot parse whole (a block type or a
// field's JSON type it does not know yet) is parsed once more with only
// the fields replyflow reads (see Parse), goes on as any other, and is
// logged. A signed, well-formed event slack-go cannot parse even so is
// answered 200 and logged: it would fail the same way on every retry, and
// Slack would retry it forever.
func (r *Receiver) EventsHandler(signingSecret string, now func() time.Time) http.Handler {
	return r.signed(signingSecret, now, func(w http.ResponseWriter, req *http.Request, body []byte) {
		if !hasMediaType(req, "application/json") {
			http.Error(w, "Slack posts events as Content-Type: application/json", http.StatusUnsupportedMediaType)
			return
		}
		var head struct {
			Type      string `json:"type"`
			Challenge string `json:"challenge"`
		}
		if err := json.Unmarshal(body, &head); err != nil || head.Type == "" {
			http.Error(w, "not a Slack Events API payload: a JSON object with a type is expected", http.StatusBadRequest)
			return
		}
		if head.Type == slackevents.URLVerification {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, head.Challenge)
			return
		}
		ev, salvaged, err := parse(body)
		if err != nil {
			r.logger.Warn("Slack event not understood; acked so that Slack does not retry it, and dropped",
				"type", head.Type, "retry", req.Header.Get("X-Slack-Retry-Num"), "error", err)
			w.WriteHeader(http.StatusOK)
			return
		}
		r.warnSalvaged(salvaged, "retry", req.Header.Get("X-Slack-Retry-Num"))
		if err := r.HandleEvent(req.Context(), ev); err != nil {
			r.logger.Warn("Slack event not accepted; answered 503 so that Slack delivers it again",
				"retry", req.Header.Get("X-Slack-Retry-Num"), "error", err)
			http.Error(w, "the event could not be handed to Temporal yet; deliver it again", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

// InteractivityHandler serves the interactivity Request URL: button
// presses (block_actions, form-encoded payload=) become Inbounds with an
// Action, answered 200 once accepted, well inside Slack's 3 s when the
// sink is up; 503 otherwise (Slack shows the user an error and does not
// retry a press, so the user presses again). Other interactions are
// answered 200 and skipped; a signed request that is no form, 415.
func (r *Receiver) InteractivityHandler(signingSecret string, now func() time.Time) http.Handler {
	return r.signed(signingSecret, now, func(w http.ResponseWriter, req *http.Request, body []byte) {
		if !hasMediaType(req, "application/x-www-form-urlencoded") {
			http.Error(w, "Slack posts interactions as Content-Type: application/x-www-form-urlencoded", http.StatusUnsupportedMediaType)
			return
		}
		form, err := url.ParseQuery(string(body))
		var cb slack.InteractionCallback
		if err == nil {
			err = json.Unmarshal([]byte(form.Get("payload")), &cb)
		}
		if err == nil && cb.Type == "" {
			err = errors.New("the payload has no type")
		}
		if err != nil {
			http.Error(w, "not a Slack interactivity payload (form field payload= with JSON): "+err.Error(), http.StatusBadRequest)
			return
		}
		if err := r.HandleInteraction(req.Context(), cb); err != nil {
			r.logger.Warn("Slack button press not accepted; answered 503, the user sees an error and may press again", "error", err)
			http.Error(w, "the press could not be handed to Temporal yet; press again", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

// hasMediaType reports whether req's body is of the media type Slack
// sends to that URL. It is checked after the signature, so a stranger
// learns nothing from it; a signed request of another type is not one
// of Slack's deliveries (415).
func hasMediaType(req *http.Request, want string) bool {
	media, _, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
	return err == nil && media == want
}

// signed reads a POST's body, at most MaxRequestBody, and checks Slack's
// signature before next sees it. A request whose signature headers fail
// is refused before its body is read: a stranger's request costs no
// more than its headers.
func (r *Receiver) signed(signingSecret string, now func() time.Time, next func(http.ResponseWriter, *http.Request, []byte)) http.Handler {
	if now == nil {
		now = time.Now
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "Slack's request URLs take POST", http.StatusMethodNotAllowed)
			return
		}
		if _, _, err := verifyHeaders(req.Header, signingSecret, now()); err != nil {
			r.refuseUnsigned(w, req, err)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, MaxRequestBody))
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			http.Error(w, "the body is larger than replyflow accepts from Slack (1 MiB)", http.StatusRequestEntityTooLarge)
			return
		case err != nil:
			http.Error(w, "the body could not be read: "+err.Error(), http.StatusBadRequest)
			return
		}
		if err := VerifyRequest(req.Header, body, signingSecret, now()); err != nil {
			r.refuseUnsigned(w, req, err)
			return
		}
		next(w, req, body)
	})
}

// refuseUnsigned answers a request whose signature does not check: 401
// with the check that failed.
func (r *Receiver) refuseUnsigned(w http.ResponseWriter, req *http.Request, err error) {
	r.logger.Warn("Slack request refused: its signature does not check", "path", req.URL.Path, "reason", err)
	http.Error(w, err.Error(), http.StatusUnauthorized)
}
