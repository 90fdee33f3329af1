package webchat

import (
	"encoding/json"
	"net/http"

	"github.com/replyflow/replyflow/pipeline"
)

// HistoryEvent is one event of GET /api/chats/{chat}/history: the same
// types and payloads as the event stream's ("user", "message" and
// "reaction"), so a page shows the history as it shows live events.
type HistoryEvent struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// getHistory answers what the chat shows now, from its log (the store's,
// so it survives a restart and is the same on every gateway): each
// message as last edited, oldest first, each followed by the reaction it
// shows. A page fetches it once its event stream is open, then applies
// the events that stream brought meanwhile.
func (s *Server) getHistory(w http.ResponseWriter, r *http.Request) {
	chat := r.PathValue("chat")
	if _, ok := s.caller(w, r, chat); !ok {
		return
	}
	if err := pipeline.ValidateID("chat", chat); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	msgs, err := s.log.ChatMessages(r.Context(), chat)
	if err != nil {
		s.cfg.Logger.Warn("Web chat history not read (is the store reachable? REPLYFLOW_STORE_DSN)", "chat", chat, "error", err)
		writeError(w, http.StatusServiceUnavailable, "the chat's history could not be read (is the store reachable? REPLYFLOW_STORE_DSN); reload to retry")
		return
	}
	events := make([]HistoryEvent, 0, len(msgs))
	for _, m := range msgs {
		data := json.RawMessage(m.Data)
		if m.Kind == "message" {
			var ev MessageEvent
			if json.Unmarshal(m.Data, &ev) != nil {
				continue
			}
			ev.HTML = renderMarkdown(ev.Text)
			data, _ = json.Marshal(ev)
		}
		events = append(events, HistoryEvent{Type: m.Kind, Data: data})
		if m.Reaction != "" {
			reaction, _ := json.Marshal(ReactionEvent{MessageID: m.ID, Emoji: m.Reaction})
			events = append(events, HistoryEvent{Type: "reaction", Data: reaction})
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{"events": events})
}
