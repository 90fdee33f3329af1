package webchat

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// Bounds of a file in the web chat: it travels in an event that open
// streams receive and the hub keeps for replay, so it is small.
const (
	MaxFileBytes     = 256 << 10
	maxFileNameBytes = 128
	// maxFileBodyBytes is the bot API body of a file: base64 makes it
	// 4/3 of the file, plus the caption and names.
	maxFileBodyBytes = MaxFileBytes*4/3 + maxBodyBytes
)

// FileEvent is a document in a bot message (Data is base64 in JSON).
type FileEvent struct {
	Name        string `json:"name"`
	ContentType string `json:"content_type"`
	Data        []byte `json:"data"`
}

func (f *FileEvent) check() error {
	switch {
	case f.Name == "" || len(f.Name) > maxFileNameBytes || !utf8.ValidString(f.Name) || strings.ContainsAny(f.Name, "/\\\x00\r\n"):
		return fmt.Errorf("file name must be 1 to %d bytes of text without a path", maxFileNameBytes)
	case len(f.ContentType) > 100 || strings.ContainsAny(f.ContentType, "\r\n"):
		return fmt.Errorf("file content type is not a media type")
	case len(f.Data) == 0 || len(f.Data) > MaxFileBytes:
		return fmt.Errorf("a file is 1 byte to %d KiB, this one is %d bytes", MaxFileBytes>>10, len(f.Data))
	}
	return nil
}

var _ adapters.FileSender = (*Client)(nil)

// SendFile sends a document with d.Text as its caption; the idempotency
// key makes a retried send return the first send's message ID.
func (c *Client) SendFile(ctx context.Context, d pipeline.Delivery, f adapters.File) (string, error) {
	file := &FileEvent{Name: f.Name, ContentType: f.ContentType, Data: f.Data}
	if err := file.check(); err != nil {
		return "", &adapters.Error{Kind: adapters.Permanent, Op: "webchat send file", Err: err}
	}
	var out struct {
		MessageID string `json:"message_id"`
	}
	body := BotMessage{IdempotencyKey: d.IdempotencyKey, Text: d.Text, ThreadID: d.ThreadID, ReplyTo: d.ReplyTo, File: file}
	err := c.call(ctx, "send file", http.MethodPost, c.path("bot/chats", d.Session.Chat, "files"), body, &out)
	return out.MessageID, err
}

// MaxFileBytes is the largest file SendFile takes.
func (c *Client) MaxFileBytes() int { return MaxFileBytes }

var _ adapters.VoiceSender = (*Client)(nil)

// SendVoice sends a spoken reply as an audio part, which the page plays
// in an <audio> element; it is a file, at most MaxFileBytes.
func (c *Client) SendVoice(ctx context.Context, d pipeline.Delivery, v adapters.File) (string, error) {
	d.Text = ""
	return c.SendFile(ctx, d, v)
}
