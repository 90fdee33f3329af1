package discordtest

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

// Identify is an IDENTIFY (op 2) the gateway received.
type Identify struct {
	Token   string // as sent ("Bot " or not: Discord takes both)
	Intents uint64
	// MessageContent says whether the privileged MESSAGE_CONTENT intent
	// (1<<15) was asked for.
	MessageContent bool
	Compress       bool
	// Session is the session READY opened; "" when the fake closed the
	// connection instead (CloseCode 4004 bad token, 4014 disallowed
	// intent).
	Session   string
	CloseCode int
}

// Resume is a RESUME (op 6) the gateway received.
type Resume struct {
	Session string
	Seq     int64
	// Resumed is false when the fake answered op 9 (invalid session);
	// Replayed counts the dispatches sent again before RESUMED.
	Resumed  bool
	Replayed int
}

// gatewayState is the gateway's part of the fake; guarded by Server.mu.
type gatewayState struct {
	conns      []*gwConn // open, oldest first
	opened     int
	sessions   []*gwSession
	identifies []Identify
	resumes    []Resume
	heartbeats int
	refuse     bool
	// refuseIdentify is the close code every IDENTIFY gets; 0 serves them.
	refuseIdentify int
}

type gwSession struct {
	id      string
	intents uint64
	seq     int64
	log     []logged // every dispatch but RESUMED, for replays
	conn    *gwConn  // nil while no connection carries it
	invalid bool
}

type logged struct {
	seq   int64
	frame []byte
}

type gwConn struct {
	ws      *websocket.Conn
	out     chan frame
	done    chan struct{} // closed when the connection ends
	session *gwSession
	zombie  bool
	// closing says the fake sent a close frame: the client's close that
	// answers it is the closing handshake, not the client ending its
	// session.
	closing bool
}

type frame struct {
	data      []byte
	closeCode int // a close frame with this code, then the end
	closeText string
}

// send queues a frame; a client too slow to take 4096 is dropped, as
// Discord drops it. s.mu must be held (the queue's order is the seq
// order).
func (c *gwConn) send(f frame) {
	if f.closeCode != 0 {
		c.closing = true
	}
	select {
	case c.out <- f:
	default:
		_ = c.ws.Close()
	}
}

func (c *gwConn) sendJSON(v any) {
	data, _ := json.Marshal(v)
	c.send(frame{data: data})
}

func (c *gwConn) writeLoop() {
	for {
		var f frame
		select {
		case <-c.done:
			return
		case f = <-c.out:
		}
		deadline := time.Now().Add(5 * time.Second)
		if f.closeCode != 0 {
			_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(f.closeCode, f.closeText), deadline)
			// The client answers the close and the reader ends; a client
			// that does not is cut off.
			_ = c.ws.SetReadDeadline(time.Now().Add(2 * time.Second))
			return
		}
		_ = c.ws.SetWriteDeadline(deadline)
		if c.ws.WriteMessage(websocket.TextMessage, f.data) != nil {
			_ = c.ws.Close()
			return
		}
	}
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) serveGateway(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	refuse := s.gw.refuse
	s.mu.Unlock()
	if refuse {
		http.Error(w, "discordtest: the gateway is refusing connections", http.StatusServiceUnavailable)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &gwConn{ws: ws, out: make(chan frame, 4096), done: make(chan struct{})}
	s.mu.Lock()
	s.gw.conns = append(s.gw.conns, c)
	s.gw.opened++
	c.sendJSON(obj{"op": 10, "s": nil, "t": nil, "d": obj{"heartbeat_interval": s.HeartbeatInterval.Milliseconds(), "_trace": []string{"discordtest"}}})
	s.touch()
	s.mu.Unlock()
	go c.writeLoop()
	s.readLoop(c)
	s.dropConn(c)
}

// readLoop handles the client's payloads until the connection ends.
func (s *Server) readLoop(c *gwConn) {
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			// Closing with 1000 or 1001 ends the session: it cannot be
			// resumed. A lost connection or another code keeps it, and
			// so does the client's answer to a close the fake sent.
			var ce *websocket.CloseError
			if errors.As(err, &ce) && (ce.Code == websocket.CloseNormalClosure || ce.Code == websocket.CloseGoingAway) {
				s.mu.Lock()
				if c.session != nil && !c.closing {
					c.session.invalid = true
				}
				s.mu.Unlock()
			}
			return
		}
		var p struct {
			Op int             `json:"op"`
			D  json.RawMessage `json:"d"`
		}
		s.mu.Lock()
		if json.Unmarshal(data, &p) != nil {
			c.send(frame{closeCode: 4002, closeText: "Error while decoding payload."})
		} else {
			s.handleOp(c, p.Op, p.D)
		}
		s.touch()
		s.mu.Unlock()
	}
}

// handleOp answers one payload; s.mu must be held.
func (s *Server) handleOp(c *gwConn, op int, d json.RawMessage) {
	switch {
	case op == 1:
		s.gw.heartbeats++
		if !c.zombie {
			c.sendJSON(obj{"op": 11, "s": nil, "t": nil, "d": nil})
		}
	case op == 2:
		s.identify(c, d)
	case op == 6:
		s.resume(c, d)
	case op == 3 || op == 4 || op == 8:
		if c.session == nil {
			c.send(frame{closeCode: 4003, closeText: "Not authenticated."})
		}
	default:
		c.send(frame{closeCode: 4001, closeText: "Unknown opcode."})
	}
}

func (s *Server) tokenOK(token string) bool {
	return strings.TrimPrefix(token, "Bot ") == s.Token
}

func (s *Server) identify(c *gwConn, d json.RawMessage) {
	var id struct {
		Token    string `json:"token"`
		Intents  uint64 `json:"intents"`
		Compress bool   `json:"compress"`
	}
	_ = json.Unmarshal(d, &id)
	rec := Identify{Token: id.Token, Intents: id.Intents, MessageContent: id.Intents&messageContentBit != 0, Compress: id.Compress}
	refuse := func(code int, text string) {
		rec.CloseCode = code
		c.send(frame{closeCode: code, closeText: text})
	}
	switch {
	case c.session != nil:
		refuse(4005, "Already authenticated.")
	case !s.tokenOK(id.Token):
		refuse(4004, "Authentication failed.")
	case s.gw.refuseIdentify != 0:
		refuse(s.gw.refuseIdentify, closeText(s.gw.refuseIdentify))
	case rec.MessageContent && s.DenyMessageContent:
		refuse(4014, "Disallowed intent(s).")
	default:
		sess := &gwSession{id: "session-" + s.snowflake(s.Now()), intents: id.Intents}
		s.gw.sessions = append(s.gw.sessions, sess)
		c.session, sess.conn = sess, c
		rec.Session = sess.id
		s.dispatchTo(sess, "READY", s.ready(sess))
		if sess.intents&intentGuilds != 0 {
			for _, g := range s.sortedGuilds() {
				s.dispatchTo(sess, "GUILD_CREATE", s.guildCreate(g))
			}
		}
	}
	s.gw.identifies = append(s.gw.identifies, rec)
}

// closeTexts are the reasons Discord gives with its close codes.
var closeTexts = map[int]string{
	4000: "Unknown error.", 4001: "Unknown opcode.", 4002: "Decode error.", 4003: "Not authenticated.",
	4004: "Authentication failed.", 4005: "Already authenticated.", 4007: "Invalid seq.", 4008: "Rate limited.",
	4009: "Session timed out.", 4010: "Invalid shard.", 4011: "Sharding required.", 4012: "Invalid API version.",
	4013: "Invalid intent(s).", 4014: "Disallowed intent(s).",
}

func closeText(code int) string { return closeTexts[code] }

func (s *Server) resume(c *gwConn, d json.RawMessage) {
	var r struct {
		Token     string `json:"token"`
		SessionID string `json:"session_id"`
		Seq       int64  `json:"seq"`
	}
	_ = json.Unmarshal(d, &r)
	rec := Resume{Session: r.SessionID, Seq: r.Seq}
	defer func() { s.gw.resumes = append(s.gw.resumes, rec) }()
	if !s.tokenOK(r.Token) {
		c.send(frame{closeCode: 4004, closeText: "Authentication failed."})
		return
	}
	var sess *gwSession
	for _, x := range s.gw.sessions {
		if x.id == r.SessionID && !x.invalid {
			sess = x
		}
	}
	if sess == nil || c.session != nil {
		c.sendJSON(obj{"op": 9, "s": nil, "t": nil, "d": false}) // not resumable: identify again
		return
	}
	if old := sess.conn; old != nil && old != c {
		_ = old.ws.Close() // the session moves: Discord drops the old connection
	}
	c.session, sess.conn = sess, c
	for _, l := range sess.log {
		if l.seq > r.Seq {
			c.send(frame{data: l.frame})
			rec.Replayed++
		}
	}
	sess.seq++
	data, _ := json.Marshal(obj{"op": 0, "s": sess.seq, "t": "RESUMED", "d": obj{"_trace": []string{"discordtest"}}})
	c.send(frame{data: data})
	rec.Resumed = true
}

func (s *Server) ready(sess *gwSession) obj {
	var guilds []obj
	for _, g := range s.sortedGuilds() {
		guilds = append(guilds, obj{"id": g.ID, "unavailable": true})
	}
	user := wireUser(s.user(s.BotID))
	user["verified"], user["mfa_enabled"], user["flags"] = true, false, 0
	return obj{"v": 9, "user": user, "guilds": orEmpty(guilds), "session_id": sess.id, "session_type": "normal",
		"resume_gateway_url": s.GatewayURL(), "application": obj{"id": s.ApplicationID, "flags": 0},
		"private_channels": []any{}, "relationships": []any{}, "_trace": []string{"discordtest"}}
}

func (s *Server) guildCreate(g *Guild) obj {
	var channels, threads []obj
	for _, st := range s.channels {
		if st.ch.GuildID != g.ID {
			continue
		}
		if st.ch.Thread() {
			threads = append(threads, s.wireChannel(st.ch))
		} else {
			channels = append(channels, s.wireChannel(st.ch))
		}
	}
	byID := func(a, b obj) int { return strings.Compare(a["id"].(string), b["id"].(string)) }
	slices.SortFunc(channels, byID)
	slices.SortFunc(threads, byID)
	return obj{"id": g.ID, "name": g.Name, "owner_id": "1", "member_count": g.Members, "large": false,
		"unavailable": false, "joined_at": s.Now().Add(-24 * time.Hour).UTC().Format(timeLayout),
		"channels": orEmpty(channels), "threads": orEmpty(threads), "members": []any{}, "roles": []any{},
		"emojis": []any{}, "stickers": []any{}, "features": []string{}, "voice_states": []any{}, "presences": []any{}}
}

func (s *Server) sortedGuilds() []*Guild {
	var out []*Guild
	for _, g := range s.guilds {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b *Guild) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func (s *Server) dropConn(c *gwConn) {
	s.mu.Lock()
	if i := slices.Index(s.gw.conns, c); i >= 0 {
		s.gw.conns = slices.Delete(s.gw.conns, i, i+1)
		close(c.done)
	}
	if c.session != nil && c.session.conn == c {
		c.session.conn = nil
	}
	s.touch()
	s.mu.Unlock()
	_ = c.ws.Close()
}

func (s *Server) closeGateway() {
	s.mu.Lock()
	conns := slices.Clone(s.gw.conns)
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.ws.Close()
	}
}
