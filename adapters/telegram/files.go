package telegram

import (
	"context"
	"errors"
	"fmt"

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
	return adapters.Download(ctx, c.cfg.HTTPClient, c.bot.FileDownloadLink(f), max, "download", nil)
}
