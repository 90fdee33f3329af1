package discord

import (
	"context"
	"errors"
	"net/url"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// cdnHosts are where Discord serves attachments; FetchFile fetches from
// no other host, whatever a reference says.
var cdnHosts = map[string]bool{"cdn.discordapp.com": true, "media.discordapp.net": true}

var _ adapters.FileFetcher = (*Client)(nil)

// FetchFile downloads an attachment from its CDN URL (the reference
// normalize keeps). Discord signs these URLs for about a day: an older
// one answers 404, a Permanent error.
func (c *Client) FetchFile(ctx context.Context, m pipeline.Media, max int64) ([]byte, error) {
	u, err := url.Parse(m.Ref)
	if err != nil || u.Scheme != "https" || !cdnHosts[u.Host] {
		return nil, &adapters.Error{Kind: adapters.Permanent, Op: "download", Err: errors.New("the attachment's reference is not a Discord CDN URL")}
	}
	return adapters.Download(ctx, c.dg.Client, m.Ref, max, "download", nil)
}
