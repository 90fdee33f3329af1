package discordtest

import (
	"net/http"
	"slices"
	"strings"
)

// RouteActiveThreads lists a guild's threads that are not archived, as a
// catch-up asks for them.
const RouteActiveThreads = "GET /guilds/{guild}/threads/active"

// activeThreads answers with every thread of the guild (the fake archives
// none), in ID order, and no thread members.
func (s *Server) activeThreads(r *request) (int, any) {
	if s.guilds[r.Vars["guild"]] == nil {
		return apiError(http.StatusNotFound, 10004, "Unknown Guild")
	}
	threads := []obj{}
	for _, st := range s.channels {
		if st.ch.GuildID == r.Vars["guild"] && st.ch.Thread() {
			threads = append(threads, s.wireChannel(st.ch))
		}
	}
	slices.SortFunc(threads, func(a, b obj) int { return strings.Compare(a["id"].(string), b["id"].(string)) })
	return http.StatusOK, obj{"threads": threads, "members": []any{}}
}
