package discordtest

import (
	"net/http"
	"strconv"
	"strings"
)

// serveCDN answers /attachments/<channel>/<attachment>/<name> as
// Discord's CDN does: the bytes of an attachment that has Data (a
// user's post that gave them, or the bot's upload), with their
// Content-Length, else 404. A client reaches it through the adapter's
// rebasing of the CDN's host.
func (s *Server) serveCDN(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/attachments/"), "/")
	if len(parts) != 3 {
		http.Error(w, "Not Found", http.StatusNotFound)
		return
	}
	s.mu.Lock()
	var data []byte
	if st := s.channels[parts[0]]; st != nil {
		for _, m := range st.msgs {
			for _, a := range m.Attachments {
				if a.ID == parts[1] && a.Filename == parts[2] {
					data = a.Data
				}
			}
		}
	}
	s.cdnServed += len(data)
	s.mu.Unlock()
	if data == nil {
		http.Error(w, "Not Found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
}

// CDNBytes is how many bytes the CDN served.
func (s *Server) CDNBytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cdnServed
}
