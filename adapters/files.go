package adapters

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

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

// Download reads the file at address through hc, with header (the
// platform's authorization, or nil), at most max bytes: a
// larger one is ErrFileTooLarge. A 403, 404 or 410 is Permanent (the file
// is gone, or its signed address expired), other failures Transient. No
// error names the address, which may hold a token or a signature.
func Download(ctx context.Context, hc *http.Client, address string, max int64, op string, header http.Header) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, address, nil)
	if err != nil {
		return nil, &Error{Kind: Permanent, Op: op, Err: errors.New("the file's download address is not a URL")}
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // without the address
		}
		return nil, &Error{Kind: Transient, Op: op, Err: err}
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusForbidden, http.StatusNotFound, http.StatusGone:
		return nil, &Error{Kind: Permanent, Op: op, Err: fmt.Errorf("the platform no longer serves the file (%s)", resp.Status)}
	default:
		return nil, &Error{Kind: Transient, Op: op, Err: fmt.Errorf("the platform answered %s", resp.Status)}
	}
	if resp.ContentLength > max {
		return nil, &Error{Kind: Permanent, Op: op, Err: fmt.Errorf("%w: %d bytes, the limit is %d", ErrFileTooLarge, resp.ContentLength, max)}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, &Error{Kind: Transient, Op: op, Err: err}
	}
	if int64(len(data)) > max {
		return nil, &Error{Kind: Permanent, Op: op, Err: fmt.Errorf("%w: more than %d bytes", ErrFileTooLarge, max)}
	}
	return data, nil
}

// UploadStore keeps the files users upload to a platform that has no
// file store of its own (the web chat): the gateway records the
// message's file with its bytes in the store's media space before the
// session hears of the message, so the turn finds them there. The store
// is the real one.
type UploadStore interface {
	// KeepUpload records m, the one file of message messageID, with its
	// bytes (content, base64) in one write that only ever adds a file:
	// once a message has a file, a KeepUpload for it changes nothing. It
	// returns nil when it kept the file, or when the message already
	// holds this very file with these bytes (a retried upload), and
	// ErrUploadTaken when the message holds anything else.
	KeepUpload(ctx context.Context, sessionID, messageID string, m pipeline.Media, content string) error
}

// ErrUploadTaken is KeepUpload's error when the message already has
// another file, other bytes, or a file whose bytes are no longer kept.
var ErrUploadTaken = errors.New("the message already has a file")

// UploadReader reads back the bytes of an uploaded file by its
// reference; ok is false once the store no longer keeps them (its
// retention or its per-chat bounds dropped them). The store is the real
// one.
type UploadReader interface {
	UploadedFile(ctx context.Context, ref string) (data []byte, ok bool, err error)
}
