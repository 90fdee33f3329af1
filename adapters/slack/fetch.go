package slack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

var _ adapters.FileFetcher = (*Client)(nil)

// FetchFile downloads a file shared in a message: files.info gives its
// size (a file over max is refused before the download) and its private
// URL, read with the bot token (the app needs the files:read scope). The
// token goes to Slack's file host only, or to the host of the configured
// API URL (a test's fake), whatever files.info says.
func (c *Client) FetchFile(ctx context.Context, m pipeline.Media, max int64) ([]byte, error) {
	f, _, _, err := c.api.GetFileInfoContext(ctx, m.Ref, 0, 0)
	if err != nil {
		if code := slackCode(err); code == "file_deleted" || code == "file_not_found" {
			// Deleted since it was shared, or never visible to the bot:
			// no retry brings it back.
			return nil, &adapters.Error{Kind: adapters.Permanent, Op: "files.info", Err: fmt.Errorf("%w (the file is gone)", err)}
		}
		return nil, classify("files.info", err)
	}
	if int64(f.Size) > max {
		return nil, &adapters.Error{Kind: adapters.Permanent, Op: "files.info", Err: fmt.Errorf("%w: %d bytes, the limit is %d", adapters.ErrFileTooLarge, f.Size, max)}
	}
	address := f.URLPrivateDownload
	if address == "" {
		address = f.URLPrivate
	}
	u, err := url.Parse(address)
	if err != nil || !c.fileHost(u) {
		return nil, &adapters.Error{Kind: adapters.Permanent, Op: "files.info", Err: errors.New("Slack gave a file address off its file host")}
	}
	header := http.Header{"Authorization": {"Bearer " + c.cfg.Token}}
	return adapters.Download(ctx, c.cfg.HTTPClient, address, max, "download", header)
}

// fileHost is whether u is where the bot token may be sent for a file.
func (c *Client) fileHost(u *url.URL) bool {
	if u.Scheme == "https" && u.Host == "files.slack.com" {
		return true
	}
	api, err := url.Parse(c.cfg.APIURL)
	return c.cfg.APIURL != "" && err == nil && u.Scheme == api.Scheme && u.Host == api.Host
}
