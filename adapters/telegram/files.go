package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/go-telegram/bot"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

var _ adapters.FileFetcher = (*Client)(nil)

// FetchFile downloads a file a user sent: getFile gives its path and
// size (a file over max is refused before the download), then the bytes
// come from the Bot API's file route. The route carries the bot token,
// so no error here names the URL.
func (c *Client) FetchFile(ctx context.Context, m pipeline.Media, max int64) ([]byte, error) {
	f, err := c.bot.GetFile(ctx, &bot.GetFileParams{FileID: m.Ref})
	if err != nil {
		return nil, classify("getFile", err)
	}
	if f.FileSize > 0 && f.FileSize > max {
		return nil, &adapters.Error{Kind: adapters.Permanent, Op: "getFile", Err: fmt.Errorf("%w: %d bytes, the limit is %d", adapters.ErrFileTooLarge, f.FileSize, max)}
	}
	if f.FilePath == "" {
		return nil, &adapters.Error{Kind: adapters.Permanent, Op: "getFile", Err: errors.New("Telegram gave no path for the file")}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.bot.FileDownloadLink(f), nil)
	if err != nil {
		return nil, &adapters.Error{Kind: adapters.Permanent, Op: "download", Err: errors.New("the file's download address is not a URL")}
	}
	hc := c.cfg.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // without the URL, which holds the token
		}
		return nil, &adapters.Error{Kind: adapters.Transient, Op: "download", Err: err}
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, &adapters.Error{Kind: adapters.Permanent, Op: "download", Err: errors.New("Telegram no longer has the file (404)")}
	case resp.StatusCode != http.StatusOK:
		return nil, &adapters.Error{Kind: adapters.Transient, Op: "download", Err: fmt.Errorf("Telegram answered %s", resp.Status)}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, &adapters.Error{Kind: adapters.Transient, Op: "download", Err: err}
	}
	if int64(len(data)) > max {
		return nil, &adapters.Error{Kind: adapters.Permanent, Op: "download", Err: fmt.Errorf("%w: more than %d bytes", adapters.ErrFileTooLarge, max)}
	}
	return data, nil
}
