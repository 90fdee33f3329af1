package slack

import (
	"bytes"
	"context"
	"fmt"

	"github.com/slack-go/slack"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/slack/mrkdwn"
	"github.com/replyflow/replyflow/pipeline"
)

// maxFileBytes bounds a file replyflow uploads (Slack takes far more; a
// transcript needs no more).
const maxFileBytes = 10 << 20

var _ adapters.FileSender = (*Client)(nil)

// SendFile uploads a document and shares it in the Delivery's channel
// and thread with d.Text as its comment (files.getUploadURLExternal, the
// upload, files.completeUploadExternal). It returns the file's ID: a
// share has no message ts of its own in the answer. A share carries no
// metadata, so unlike Send a retry after a lost answer on another worker
// can share the file twice; a retry on this worker cannot.
func (c *Client) SendFile(ctx context.Context, d pipeline.Delivery, f adapters.File) (string, error) {
	const op = "files.completeUploadExternal"
	if id, ok := c.sent.Get(d.IdempotencyKey); ok {
		return id, nil
	}
	channel, err := channelOf(d.Session, op)
	if err != nil {
		return "", err
	}
	if len(f.Data) == 0 || len(f.Data) > maxFileBytes {
		return "", &adapters.Error{Kind: adapters.Permanent, Op: op, Err: fmt.Errorf("the file is %d bytes; replyflow uploads 1 byte to %d MiB", len(f.Data), maxFileBytes>>20)}
	}
	if err := c.pace.wait(ctx, adapters.PriorityOf(ctx), channel, op); err != nil {
		return "", err
	}
	file, err := c.api.UploadFileContext(ctx, slack.UploadFileParameters{
		Filename: f.Name, Title: f.Name, FileSize: len(f.Data), Reader: bytes.NewReader(f.Data),
		Channel: channel, ThreadTimestamp: d.ThreadID, InitialComment: mrkdwn.Render(d.Text),
	})
	if err != nil {
		return "", c.failed(channel, op, err)
	}
	c.sent.Put(d.IdempotencyKey, file.ID)
	return file.ID, nil
}

// MaxFileBytes is the largest file SendFile takes.
func (c *Client) MaxFileBytes() int { return maxFileBytes }

var _ adapters.VoiceSender = (*Client)(nil)

// SendVoice uploads a spoken reply as an audio file in the Delivery's
// channel and thread, without a comment, as SendFile does.
func (c *Client) SendVoice(ctx context.Context, d pipeline.Delivery, v adapters.File) (string, error) {
	d.Text = ""
	return c.SendFile(ctx, d, v)
}
