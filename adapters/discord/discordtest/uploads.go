package discordtest

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
)

// maxUpload is Discord's bound on a bot's file without a server boost.
const maxUpload = 8 << 20

func isMultipart(r *http.Request) bool {
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mediaType == "multipart/form-data"
}

// readMultipart reads a message with files as Discord takes it: the JSON
// in the payload_json part, each file in a files[n] part.
func readMultipart(contentType string, raw []byte) (payload []byte, files []Attachment, err error) {
	_, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, nil, err
	}
	mr := multipart.NewReader(bytes.NewReader(raw), params["boundary"])
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return payload, files, nil
		}
		if err != nil {
			return nil, nil, err
		}
		data, err := io.ReadAll(io.LimitReader(part, maxUpload+1))
		if err != nil {
			return nil, nil, err
		}
		switch name := part.FormName(); {
		case name == "payload_json":
			payload = data
		case strings.HasPrefix(name, "files["):
			files = append(files, Attachment{Filename: part.FileName(), ContentType: part.Header.Get("Content-Type"), Size: len(data), Data: data})
		}
	}
}

// composeWithFiles is compose for a message that may carry files alone,
// which needs no content; a file over the bound is refused as Discord
// does.
func (s *Server) composeWithFiles(m *message, p payload, hasFiles bool) (int, any) {
	for _, a := range m.Attachments {
		if a.Size > maxUpload {
			return apiError(http.StatusRequestEntityTooLarge, 40005, "Request entity too large")
		}
	}
	if hasFiles && p.Content == nil {
		empty := ""
		p.Content = &empty
	}
	return s.compose(m, p, !hasFiles)
}
