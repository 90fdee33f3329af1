package discord

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	"github.com/bwmarrin/discordgo"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// maxFileBytes is what a bot may upload without a server boost.
const maxFileBytes = 8 << 20

const opSendFile = "discord send file"

var _ adapters.FileSender = (*Client)(nil)

// SendFile posts a document with d.Text as its caption, in the thread or
// channel and as a soft reply, like Send (and with its nonce, so a retry
// within Discord's nonce window is one message).
func (c *Client) SendFile(ctx context.Context, d pipeline.Delivery, f adapters.File) (string, error) {
	channel, err := target(d.Session, d.ThreadID, opSendFile)
	if err != nil {
		return "", err
	}
	if len(f.Data) > maxFileBytes {
		return "", &adapters.Error{Kind: adapters.Permanent, Op: opSendFile, Err: fmt.Errorf("the file is %d bytes; a bot uploads at most %d MiB", len(f.Data), maxFileBytes>>20)}
	}
	body := messageBody{Content: c.content(d.Session, d.Text), AllowedMentions: noMentions(), MessageReference: softReply(d.ReplyTo)}
	if body.Nonce = Nonce(d.IdempotencyKey); body.Nonce != "" {
		body.EnforceNonce = true
	}
	files := []*discordgo.File{{Name: f.Name, ContentType: f.ContentType, Reader: bytes.NewReader(f.Data)}}
	endpoint := discordgo.EndpointChannelMessages(channel)
	var m discordgo.Message
	if err := c.call(ctx, request{op: opSendFile, method: http.MethodPost, url: endpoint, bucket: endpoint, body: body, files: files, wait: true}, &m); err != nil {
		return "", err
	}
	return m.ID, nil
}

// MaxFileBytes is the largest file SendFile takes.
func (c *Client) MaxFileBytes() int { return maxFileBytes }

var _ adapters.VoiceSender = (*Client)(nil)

// SendVoice posts a spoken reply as an audio file (Discord plays it in
// the channel), without a caption, as SendFile does.
func (c *Client) SendVoice(ctx context.Context, d pipeline.Delivery, v adapters.File) (string, error) {
	d.Text = ""
	return c.SendFile(ctx, d, v)
}
