package slacktest

import (
	"net/http"
	"strings"
)

// privateURL is where the fake serves a file to a bearer of the bot
// token, as Slack's url_private does.
func (s *Server) privateURL(f File) string {
	return s.http.URL + "/files-pri/" + f.ID + "/" + f.Name
}

// findFile is the file of a message with that ID; s.mu must be held.
func (s *Server) findFile(id string) (File, bool) {
	for _, st := range s.channels {
		for _, m := range st.messages {
			for _, f := range m.Files {
				if f.ID == id {
					return f, true
				}
			}
		}
	}
	return File{}, false
}

// fileInfo is files.info: a file's name, type, size and private URLs.
func (s *Server) fileInfo(p map[string]string) answer {
	f, ok := s.findFile(p["file"])
	if !ok {
		return slackErr("file_not_found")
	}
	if f.Deleted {
		return slackErr("file_deleted")
	}
	size := f.Size
	if size == 0 {
		size = len(f.Data)
	}
	u := s.privateURL(f)
	return answer{"file": withClip(f, map[string]any{"id": f.ID, "name": f.Name, "mimetype": f.Mimetype, "size": size, "url_private": u, "url_private_download": u})}
}

// serveFile answers url_private: the file's bytes to the bot token's
// bearer, else what Slack answers a browser without a session (a 302 to
// the sign-in page, here a 403).
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+s.BotToken {
		http.Error(w, "Forbidden", http.StatusForbidden)
		return
	}
	id, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/files-pri/"), "/")
	s.mu.Lock()
	f, ok := s.findFile(id)
	served := ok && f.Data != nil && !f.Deleted
	if served {
		s.fetched++
	}
	s.mu.Unlock()
	if !served {
		http.Error(w, "Not Found", http.StatusNotFound)
		return
	}
	s.touch()
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(f.Data)
}

// Downloads is how many files url_private served (to the bot token's
// bearer).
func (s *Server) Downloads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fetched
}
