package slack

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/replyflow/replyflow/adapters/internal/rawjson"
)

// historyAPI reads conversations.history and conversations.replies for
// the catch-up and for the outbound client's duplicate lookup, with the
// token, base URL and HTTP client their slack-go client is given.
// slack-go decodes a page whole, so one message it cannot read (a block
// type it does not know yet) fails the page and, with it, every message
// on it; here the page is decoded with its messages left raw, and each
// is decoded on its own (catchup.messages, chunkIn).
// The request and the errors are slack-go's: the same form fields,
// a 429 with Retry-After is a *slack.RateLimitedError, another status
// than 200 a slack.StatusCodeError, ok:false a slack.SlackErrorResponse.
type historyAPI struct {
	client   *http.Client
	token    string
	endpoint string // slack.APIURL, or the fake's in tests
	// metadata asks for every message's metadata (include_all_metadata),
	// which the duplicate lookup reads and the catch-up does not.
	metadata bool
}

func newHistoryAPI(client *http.Client, token, apiURL string) historyAPI {
	if apiURL == "" {
		apiURL = slack.APIURL
	}
	return historyAPI{client: client, token: token, endpoint: apiURL}
}

// withMetadata is h asking for every message's metadata.
func (h historyAPI) withMetadata() historyAPI {
	h.metadata = true
	return h
}

// historyPage is one answer of either method. Its raw messages are held
// only while the page is read: at most one page, of the limit asked for
// (catchupPageSize, or the lookup's threadLookupLimit or
// channelLookupLimit), as slack-go would hold them decoded.
type historyPage struct {
	// ok, error, response_metadata.next_cursor
	slack.SlackResponse
	HasMore  bool              `json:"has_more"`
	Messages []json.RawMessage `json:"messages"`
}

// history reads one page of channel's history above oldest, newest
// first.
func (h historyAPI) history(ctx context.Context, channel, oldest, cursor string, limit int) (historyPage, error) {
	params := url.Values{"channel": {channel}, "inclusive": {"0"}, "include_all_metadata": {h.allMetadata()},
		"limit": {strconv.Itoa(limit)}, "oldest": {oldest}}
	if cursor != "" {
		params.Set("cursor", cursor)
	}
	return h.read(ctx, "conversations.history", params)
}

// replies reads the first page of a thread above oldest: its parent
// and replies, oldest first.
func (h historyAPI) replies(ctx context.Context, channel, thread, oldest string, limit int) (historyPage, error) {
	return h.read(ctx, "conversations.replies", url.Values{"channel": {channel}, "ts": {thread}, "inclusive": {"0"},
		"include_all_metadata": {h.allMetadata()}, "limit": {strconv.Itoa(limit)}, "oldest": {oldest}})
}

// allMetadata is the include_all_metadata form field, as slack-go sends it.
func (h historyAPI) allMetadata() string {
	if h.metadata {
		return "1"
	}
	return "0"
}

func (h historyAPI) read(ctx context.Context, method string, params url.Values) (historyPage, error) {
	params.Set("token", h.token)
	if params.Get("oldest") == "" {
		params.Del("oldest")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.endpoint+method, strings.NewReader(params.Encode()))
	if err != nil {
		return historyPage{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := h.client.Do(req)
	if err != nil {
		return historyPage{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "" {
		secs, err := strconv.ParseInt(resp.Header.Get("Retry-After"), 10, 64)
		if err != nil {
			return historyPage{}, err
		}
		return historyPage{}, &slack.RateLimitedError{RetryAfter: time.Duration(secs) * time.Second}
	}
	if resp.StatusCode != http.StatusOK {
		return historyPage{}, slack.StatusCodeError{Code: resp.StatusCode, Status: resp.Status}
	}
	var page historyPage
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		return historyPage{}, err
	}
	return page, page.Err()
}

// decodeMessage reads one message of a page as slack-go reads it, or,
// when slack-go cannot, through salvageMessage; err when neither can.
func decodeMessage(raw json.RawMessage) (slack.Message, *Salvage, error) {
	var m slack.Message
	err := json.Unmarshal(raw, &m)
	if err == nil {
		return m, nil, nil
	}
	return salvageMessage(raw, err)
}

// tsForLog is a message's ts for the log: as sent when it is a string,
// else its JSON clipped; never another field of the message.
func tsForLog(raw json.RawMessage) string {
	obj, _ := rawjson.Object(raw)
	ts, ok := obj["ts"]
	if !ok {
		return ""
	}
	if s := rawjson.String(ts); s != "" {
		return s
	}
	const clip = 40
	if len(ts) > clip {
		return string(ts[:clip]) + "…"
	}
	return string(ts)
}
