package adapters

import (
	"context"
	"errors"

	"github.com/replyflow/replyflow/pipeline"
)

// FileFetcher is what an Outbound implements when it can download the
// files users send: a turn's activity reads the bytes of the message's
// media (pipeline.Media, the platform's references) through it. Fetch
// reads at most max bytes: a larger file is ErrFileTooLarge, refused
// before the download where the platform gives the size.
type FileFetcher interface {
	FetchFile(ctx context.Context, m pipeline.Media, max int64) ([]byte, error)
}

// ErrFileTooLarge is the error of a file over the fetch's limit.
var ErrFileTooLarge = errors.New("the file is larger than REPLYFLOW_MEDIA_MAX_BYTES")

// MediaLog records the media references of an accepted message, keyed by
// its session and message ID, before the session hears of it; the turn's
// activity reads them back (the store is the real one). The references
// ride in workflow history only as the message's text.
type MediaLog interface {
	RecordMedia(ctx context.Context, sessionID, messageID string, media []pipeline.Media) error
}
