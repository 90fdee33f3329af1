package webchat

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// uploadRefPrefix starts the reference of a file uploaded to the web
// chat: "upload:<chat>/<message ID>/<position>", named by the message so
// that a retried upload (same message_id) is the same file.
const uploadRefPrefix = "upload:"

// maxUploadFields bounds the form fields of an upload besides the file
// (text, message_id, sender_id, sender_name), all of them together.
const maxUploadFields = maxBodyBytes

// uploadTypes are the types a file uploaded to the web chat may be,
// sniffed from its bytes (never taken from its name or the browser's
// word): what a model is shown (images, PDFs) or reads inline (plain
// text). Anything else is refused at the upload, before it is kept.
var uploadTypes = map[string]bool{
	"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true,
	"application/pdf": true, "text/plain": true,
}

// uploadAudio maps the sniffed types of the sounds the web chat takes to
// the audio type the file is kept as: its Media Kind is "audio", so the
// worker transcribes it. The sniffer names containers, not what they
// hold: an Opus voice note is application/ogg, and what a browser's
// MediaRecorder records is video/webm (Chromium, Firefox). An .m4a, and
// what Safari's MediaRecorder records, is an MP4 container and sniffs as
// video/mp4; it is taken as audio/mp4 so that the 🎤 button works there
// too. A video sent as one is then transcribed, which is what the
// transcription API does with an MP4 (it reads the sound track), and it
// is bounded as every upload is. The sounds the sniffer does not name
// (an untagged MP3, an Apple .m4a, FLAC) are named by sniffSound.
var uploadAudio = map[string]string{
	"audio/mpeg":      "audio/mpeg",
	"audio/wave":      "audio/wav",
	"application/ogg": "audio/ogg",
	"video/webm":      "audio/webm",
	"video/mp4":       "audio/mp4",
	"audio/mp4":       "audio/mp4",
	"audio/flac":      "audio/flac",
}

// isUpload is whether r is an upload (a multipart form, the one body
// besides JSON a state-changing request may have): only the upload route
// reads it, behind the same cross-origin checks.
func isUpload(r *http.Request) bool {
	media, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && media == "multipart/form-data" && r.Method == http.MethodPost &&
		strings.HasPrefix(r.URL.Path, "/api/chats/") && strings.HasSuffix(r.URL.Path, "/uploads")
}

// isSVG is whether text is an SVG image, which sniffs as plain text: an
// image that can hold script, refused rather than passed on as text. Its
// <svg root may come after a prolog of any length (blank lines, a
// DOCTYPE's internal subset), so a text that starts as markup is looked
// at whole.
func isSVG(data []byte) bool {
	head := data[:min(len(data), 1024)]
	if containsFold(head, "<svg") {
		return true
	}
	body := bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), " \t\r\n\f")
	return bytes.HasPrefix(body, []byte("<")) && containsFold(body, "<svg")
}

// containsFold is whether data holds the ASCII word, in any case.
func containsFold(data []byte, word string) bool {
	for i := bytes.IndexByte(data, word[0]); i >= 0; {
		if len(data)-i >= len(word) && bytes.EqualFold(data[i:i+len(word)], []byte(word)) {
			return true
		}
		next := bytes.IndexByte(data[i+1:], word[0])
		if next < 0 {
			return false
		}
		i += 1 + next
	}
	return false
}

// upload is what a multipart upload carries.
type upload struct {
	msg  UserMessage
	name string
	data []byte
}

// postUpload takes a user message with one file (POST
// /api/chats/{chat}/uploads, multipart: the fields text, message_id,
// sender_id, sender_name as the JSON message's, and file). The file is
// bounded (REPLYFLOW_MEDIA_MAX_BYTES), its type sniffed, and its bytes
// kept in the store's media space before the message is accepted: the
// web chat has no platform to download it from later. The message
// carries the file by reference, as other platforms' do.
func (s *Server) postUpload(w http.ResponseWriter, r *http.Request) {
	chat := r.PathValue("chat")
	who, ok := s.caller(w, r, chat)
	if !ok {
		return
	}
	if s.cfg.Uploads == nil || s.cfg.MaxUploadBytes <= 0 {
		writeError(w, http.StatusNotImplemented, "this gateway takes no files: the web chat keeps them in the store, with REPLYFLOW_MEDIA=true and REPLYFLOW_STORE_DSN")
		return
	}
	if err := pipeline.ValidateID("chat", chat); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if who != nil && !who.AllChats {
		if !s.uploads.take(who.Sub) {
			w.Header().Set("Retry-After", "5")
			writeError(w, http.StatusTooManyRequests, fmt.Sprintf(
				"this sender already has %d uploads in flight, the most one sender may; send this file once one has finished", MaxUploadsPerSender))
			return
		}
		defer s.uploads.release(who.Sub)
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxUploadBytes+maxUploadFields+16<<10)
	u, status, err := readUpload(r, s.cfg.MaxUploadBytes)
	if err != nil {
		writeError(w, status, err.Error())
		return
	}
	sniffed := http.DetectContentType(u.data)
	kind, _, _ := mime.ParseMediaType(sniffed)
	if kind == "text/plain" && isSVG(u.data) {
		sniffed = "image/svg+xml"
	}
	if kind == "application/octet-stream" {
		if sound := sniffSound(u.data); sound != "" {
			sniffed, kind = sound, sound
		}
	}
	if audio, ok := uploadAudio[kind]; ok {
		kind = audio
	} else if !uploadTypes[kind] || (kind == "text/plain" && (!utf8.Valid(u.data) || sniffed == "image/svg+xml")) {
		writeError(w, http.StatusUnsupportedMediaType, fmt.Sprintf(
			"the file's bytes are %s, which the web chat does not take: send an image (JPEG, PNG, GIF, WebP), a PDF, a UTF-8 text file or a sound (MP3, WAV, Ogg, WebM, M4A, FLAC)", sniffed))
		return
	}
	if !speaksAs(w, who, &u.msg.SenderID, &u.msg.SenderName) {
		return
	}
	if u.msg.MessageID == "" {
		u.msg.MessageID = randomID("u-")
	} else {
		sender, accepted, err := s.senderOf(r.Context(), chat, u.msg.MessageID)
		switch {
		case err != nil:
			s.cfg.Logger.Warn("An upload's message_id was not looked up in the chat's log; the client may retry with the same message_id",
				"chat", chat, "message_id", u.msg.MessageID, "error", err)
			writeError(w, http.StatusServiceUnavailable, "the file was not kept (is the store reachable? REPLYFLOW_STORE_DSN); retry with the same message_id")
			return
		case accepted && sender == u.msg.SenderID:
			// A retry of an accepted upload: answered as a repeated
			// JSON message is, without a write.
			writeJSON(w, http.StatusAccepted, map[string]string{"message_id": u.msg.MessageID})
			return
		case accepted:
			writeUploadTaken(w, u.msg.MessageID)
			return
		}
	}
	file := pipeline.Media{Kind: pipeline.MediaKindOf(kind), Ref: uploadRefPrefix + chat + "/" + u.msg.MessageID + "/0", MimeType: kind, Name: pipeline.ClipFileName(u.name)}
	in, err := u.msg.inbound(chat, s.cfg.Now(), file)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	in.SenderIsOwner = who != nil && who.Owner
	if err := s.keep(r.Context(), in, u.data); errors.Is(err, adapters.ErrUploadTaken) {
		writeUploadTaken(w, in.MessageID)
		return
	} else if err != nil {
		s.cfg.Logger.Error("An uploaded file was not kept in the store; the client may retry with the same message_id",
			"session", in.Session().WorkflowID(), "message_id", in.MessageID, "error", err)
		writeError(w, http.StatusServiceUnavailable, "the file was not kept (is the store reachable? REPLYFLOW_STORE_DSN); retry with the same message_id")
		return
	}
	s.accept(w, r, in, []UploadEvent{{Name: file.Name, ContentType: kind, Size: len(u.data)}})
}

// keep records the message's file and its bytes in the store, before
// the session hears of the message: the turn finds them there.
//
// The message ID is the client's, and every sender of a shared chat sees
// the others' in the event stream, so an upload must never change what
// a message ID already names. Two rules, both kept in the store that
// every gateway shares (never in a process's memory, which another
// gateway does not see): an ID the chat's log holds (an accepted
// message, recorded once Temporal took it) is a retry when its sender
// sends it again, answered without a write, and refused for anyone
// else (senderOf); and the store writes a message's file and bytes
// only where the message has none yet, in one insert (KeepUpload), so
// a message accepted without a file, or not yet in the log, or whose
// log entry was trimmed, still keeps the first file it was given. A
// retry of an upload whose accept failed finds its own file and bytes
// there and goes on; a keep that failed wrote nothing.
func (s *Server) keep(ctx context.Context, in pipeline.Inbound, data []byte) error {
	return s.cfg.Uploads.KeepUpload(ctx, in.Session().WorkflowID(), in.MessageID, in.Media[0], base64.StdEncoding.EncodeToString(data))
}

// senderOf is the sender of message id of chat, when the chat's log
// has it as a user's message; accepted is whether the log has the ID
// at all (a bot's message is no sender's).
func (s *Server) senderOf(ctx context.Context, chat, id string) (sender string, accepted bool, err error) {
	m, ok, err := s.log.ChatMessage(ctx, chat, id)
	if err != nil || !ok {
		return "", false, err
	}
	if m.Kind == "user" {
		var user UserEvent
		if json.Unmarshal(m.Data, &user) == nil {
			sender = user.SenderID
		}
	}
	return sender, true, nil
}

// writeUploadTaken refuses an upload whose message_id names another
// message of the chat, or a message with another file.
func writeUploadTaken(w http.ResponseWriter, id string) {
	writeError(w, http.StatusConflict, fmt.Sprintf(
		"message_id %q already names another message of this chat, or one with another file: this file was neither kept nor sent; send it with a new message_id (or none: the gateway then picks one)", id))
}

// readUpload reads an upload's fields and its one file, at most max
// bytes; its error says what is wrong, with the status to answer.
func readUpload(r *http.Request, max int64) (upload, int, error) {
	var u upload
	_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	body := &closingReader{ReadCloser: r.Body, delim: []byte("\n--" + params["boundary"] + "--"), seam: []byte("\n")}
	r.Body = body
	mr, err := r.MultipartReader()
	if err != nil {
		return u, http.StatusBadRequest, fmt.Errorf("the body is not a multipart form: %w", err)
	}
	fields := int64(0)
	files := 0
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			if !body.closed {
				// Cut off, or delimited by another boundary: what
				// followed (a caption, the file) is lost.
				return u, http.StatusBadRequest, errors.New("the form could not be read: it ends before its closing delimiter (--boundary--)")
			}
			break
		}
		if err != nil {
			return u, bodyStatus(err), fmt.Errorf("the form could not be read: %w", err)
		}
		if part.FileName() != "" || part.FormName() == "file" {
			if files++; files > 1 {
				return u, http.StatusBadRequest, errors.New("one file a message: send each in a message of its own")
			}
			u.name = part.FileName()
			if u.data, err = io.ReadAll(io.LimitReader(part, max+1)); err != nil {
				return u, bodyStatus(err), fmt.Errorf("the file could not be read: %w", err)
			}
			if int64(len(u.data)) > max {
				return u, http.StatusRequestEntityTooLarge, fmt.Errorf("the file is larger than %d bytes, the most the web chat takes (REPLYFLOW_MEDIA_MAX_BYTES)", max)
			}
			continue
		}
		value, err := io.ReadAll(io.LimitReader(part, maxUploadFields-fields+1))
		if err != nil {
			return u, bodyStatus(err), fmt.Errorf("the form could not be read: %w", err)
		}
		if fields += int64(len(value)); fields > maxUploadFields {
			return u, http.StatusRequestEntityTooLarge, fmt.Errorf("the form's fields are more than %d bytes", maxUploadFields)
		}
		switch part.FormName() {
		case "text":
			u.msg.Text = string(value)
		case "message_id":
			u.msg.MessageID = string(value)
		case "sender_id":
			u.msg.SenderID = string(value)
		case "sender_name":
			u.msg.SenderName = string(value)
		default:
			return u, http.StatusBadRequest, fmt.Errorf("unknown form field %q: an upload has text, message_id, sender_id, sender_name and file", part.FormName())
		}
	}
	if files == 0 || len(u.data) == 0 {
		return u, http.StatusBadRequest, errors.New("the form has no file, or an empty one (field file)")
	}
	return u, 0, nil
}

// closingReader reads a form's body and notes whether its closing
// delimiter went by: the multipart reader answers io.EOF at that
// delimiter, and also when the body ends just after another one, inside
// a part's headers, and only the first is a form that ended. A part's
// content never holds the delimiter (it would end the part), so the
// delimiter's bytes anywhere in the body are the close.
type closingReader struct {
	io.ReadCloser
	delim []byte // "\n--boundary--"
	// seam is the end of what was read before, up to len(delim)-1
	// bytes, for a delimiter split across two reads; it starts as "\n",
	// so that a body that starts with the delimiter is an empty form.
	seam   []byte
	closed bool
}

func (c *closingReader) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	if c.closed || n == 0 {
		return n, err
	}
	keep := len(c.delim) - 1
	c.seam = append(c.seam, p[:min(n, keep)]...)
	c.closed = bytes.Contains(c.seam, c.delim) || bytes.Contains(p[:n], c.delim)
	if n >= keep {
		c.seam = append(c.seam[:0], p[n-keep:n]...)
	} else if len(c.seam) > keep {
		c.seam = c.seam[len(c.seam)-keep:]
	}
	return n, err
}

var _ adapters.FileFetcher = (*Client)(nil)

// SetUploads makes the client read the files users uploaded from the
// store (FetchFile). Call it before the client is used.
func (c *Client) SetUploads(r adapters.UploadReader) { c.uploads = r }

// FetchFile reads a file a user uploaded from the store's media space,
// where the gateway kept it: the web chat has no platform to download it
// from. A file the store no longer keeps (its retention, or the chat's
// bounds) is Permanent.
func (c *Client) FetchFile(ctx context.Context, m pipeline.Media, max int64) ([]byte, error) {
	const op = "webchat fetch file"
	if !strings.HasPrefix(m.Ref, uploadRefPrefix) {
		return nil, &adapters.Error{Kind: adapters.Permanent, Op: op, Err: errors.New("not a file uploaded to the web chat")}
	}
	if c.uploads == nil {
		return nil, &adapters.Error{Kind: adapters.Permanent, Op: op, Err: errors.New("the worker reads the web chat's files from the store, and has none")}
	}
	data, ok, err := c.uploads.UploadedFile(ctx, m.Ref)
	switch {
	case err != nil:
		return nil, &adapters.Error{Kind: adapters.Transient, Op: op, Err: err}
	case !ok:
		return nil, &adapters.Error{Kind: adapters.Permanent, Op: op, Err: errors.New("the store no longer keeps the file (REPLYFLOW_MEDIA_RETENTION, or the chat's bounds)")}
	case int64(len(data)) > max:
		return nil, &adapters.Error{Kind: adapters.Permanent, Op: op, Err: fmt.Errorf("%w: %d bytes, the limit is %d", adapters.ErrFileTooLarge, len(data), max)}
	}
	return data, nil
}
