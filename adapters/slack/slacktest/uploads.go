package slacktest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// maxUpload bounds a file the fake takes.
const maxUpload = 16 << 20

// upload is a file between files.getUploadURLExternal and
// files.completeUploadExternal.
type upload struct {
	name     string
	length   int
	data     []byte
	received bool
}

// getUploadURL is files.getUploadURLExternal: a file ID and a URL on this
// server to POST the content to.
func (s *Server) getUploadURL(p map[string]string) answer {
	length, err := strconv.Atoi(p["length"])
	switch {
	case p["filename"] == "":
		return slackErr("invalid_arguments")
	case err != nil || length <= 0:
		return slackErr("invalid_arguments")
	case length > maxUpload:
		return slackErr("file_too_large")
	}
	if s.uploads == nil {
		s.uploads = map[string]*upload{}
	}
	s.nextID++
	id := fmt.Sprintf("F%06d", s.nextID)
	s.uploads[id] = &upload{name: p["filename"], length: length}
	return answer{"upload_url": s.http.URL + "/upload/" + id, "file_id": id}
}

// serveUpload takes a file's content as Slack's upload URL does: a
// multipart "file" part (or the raw body).
func (s *Server) serveUpload(w http.ResponseWriter, r *http.Request) {
	var data []byte
	if f, _, err := r.FormFile("file"); err == nil {
		data, err = io.ReadAll(io.LimitReader(f, maxUpload+1))
		f.Close()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	} else if data, err = io.ReadAll(io.LimitReader(r.Body, maxUpload+1)); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	up := s.uploads[r.PathValue("file")]
	if up == nil || len(data) != up.length {
		http.Error(w, "no such upload, or not its length", http.StatusBadRequest)
		return
	}
	up.data, up.received = data, true
	_, _ = fmt.Fprintf(w, "OK - %d", len(data))
}

// completeUpload is files.completeUploadExternal: the uploaded files are
// shared in the channel (and thread) as one bot message whose text is
// the initial comment.
func (s *Server) completeUpload(p map[string]string) answer {
	var files []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	if err := json.Unmarshal([]byte(p["files"]), &files); err != nil || len(files) == 0 {
		return slackErr("invalid_arguments")
	}
	st := s.channels[p["channel_id"]]
	if st == nil {
		return slackErr("channel_not_found")
	}
	if ts := p["thread_ts"]; ts != "" && st.messages[ts] == nil {
		return slackErr("thread_not_found")
	}
	m := &Message{User: s.BotUserID, BotID: s.BotID, Text: p["initial_comment"], ThreadTS: p["thread_ts"]}
	var out []answer
	for _, f := range files {
		up := s.uploads[f.ID]
		if up == nil || !up.received {
			return slackErr("file_not_found")
		}
		delete(s.uploads, f.ID)
		m.Files = append(m.Files, File{ID: f.ID, Name: up.name, Mimetype: "text/markdown", Data: up.data})
		out = append(out, answer{"id": f.ID, "title": f.Title})
	}
	s.add(st, m)
	return answer{"files": out}
}
