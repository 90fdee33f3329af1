package telegramtest

import (
	"net/http"
	"strings"
)

// maxFiles bounds the files a fake serves.
const maxFiles = 1000

// AddFile makes the fake serve data as the file fileID (a photo's,
// document's or voice note's file ID, as in Incoming): getFile gives its
// size and path, and the file route its bytes, as Telegram does.
func (s *Server) AddFile(fileID string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files == nil {
		s.files = map[string][]byte{}
	}
	if len(s.files) >= maxFiles {
		panic("telegramtest: more than maxFiles files")
	}
	s.files[fileID] = data
}

// RemoveFile makes fileID's download answer 404 (getFile still names
// it), as a file Telegram no longer keeps.
func (s *Server) RemoveFile(fileID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[fileID] = nil
}

// HoldDownloads keeps each download from the file route unanswered
// until release is closed, or its client goes away: a test decides the
// moment a download in flight ends (a worker killed mid-download).
// Downloads counts a held download when it arrives; nil holds none.
func (s *Server) HoldDownloads(release <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holdFiles = release
}

// Downloads is how many files were downloaded from the file route,
// counting those held (HoldDownloads) as they arrive.
func (s *Server) Downloads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.downloads
}

// getFile runs under s.mu, as every method does.
func (s *Server) getFile(p map[string]string) (int, wireResponse) {
	id := p["file_id"]
	data, ok := s.files[id]
	if !ok {
		return http.StatusBadRequest, wireResponse{ErrorCode: http.StatusBadRequest, Description: "Bad Request: invalid file_id"}
	}
	return http.StatusOK, wireResponse{OK: true, Result: wireFile{FileID: id, FileUniqueID: id + "-u", FileSize: int64(len(data)), FilePath: "files/" + id}}
}

// serveFile answers /file/bot<token>/<path>.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, rest string) {
	token, path, _ := strings.Cut(rest, "/")
	if token != s.Token {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	s.mu.Lock()
	data := s.files[strings.TrimPrefix(path, "files/")]
	if data != nil {
		s.downloads++
	}
	hold := s.holdFiles
	s.mu.Unlock()
	if data == nil {
		http.Error(w, "Not Found", http.StatusNotFound)
		return
	}
	s.touch()
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(data)
}
