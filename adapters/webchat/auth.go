package webchat

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// AuthMode says how the user API learns who speaks.
type AuthMode string

const (
	// AuthToken: a signed token says who speaks (a Bearer token, or the
	// cookie a login link sets); the body cannot say otherwise.
	AuthToken AuthMode = "token"
	// AuthNone: the body's sender_id says who speaks, so anyone who
	// reaches the gateway may speak as anyone. For loopback only.
	AuthNone AuthMode = "none"
)

// ParseAuthMode reads REPLYFLOW_WEBCHAT_AUTH; empty means token.
func ParseAuthMode(s string) (AuthMode, error) {
	switch AuthMode(s) {
	case "", AuthToken:
		return AuthToken, nil
	case AuthNone:
		return AuthNone, nil
	}
	return "", fmt.Errorf("REPLYFLOW_WEBCHAT_AUTH must be token or none, got %q", s)
}

// CookieName is the cookie a login link sets: a user token, HttpOnly.
const CookieName = "replyflow_webchat"

// maxUsedLinks bounds the login links remembered as used. Each is kept
// until it expires (at most LoginLinkTTL plus clockSkew), so this is how
// many sign-ins one gateway takes in about 15 minutes.
const maxUsedLinks = 10000

const signInHint = "`replyflow webchat token <you>` prints a token and a login link"

// caller is who a user API call for chat speaks as: the verified claims in
// token mode, nil in none mode. It writes 401 (no or a bad token) or 403
// (a token confined to other chats) and returns false when the call may
// not go on. chat "" is any chat.
func (s *Server) caller(w http.ResponseWriter, r *http.Request, chat string) (*Claims, bool) {
	if s.cfg.Auth == AuthNone {
		return nil, true
	}
	token, err := presentedToken(r)
	if err == nil {
		var c Claims
		if c, err = s.signer.Verify(token, KindUser, s.cfg.Now()); err == nil {
			if chat != "" && !c.AllowsChat(chat) {
				writeError(w, http.StatusForbidden, outsideReach(c, chat))
				return nil, false
			}
			return &c, true
		}
		err = fmt.Errorf("%w; ask for a new one (%s)", err, signInHint)
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="replyflow web chat"`)
	writeError(w, http.StatusUnauthorized, err.Error())
	return nil, false
}

// outsideReach is the reason a token may not be used in chat, and how
// to get one that may.
func outsideReach(c Claims, chat string) string {
	if len(c.Chats) > 0 {
		return fmt.Sprintf("this sign-in is confined to other chats than %q: ask for a token with `--chat %s`", chat, chat)
	}
	return fmt.Sprintf("this sign-in reaches only the chat %q (its sender's own), not %q: ask for a token with `--chat %s`, or, for a trusted front end, `--all-chats`", c.Sub, chat, chat)
}

// presentedToken is the request's Bearer token, else its cookie's. The
// errors never include what was sent.
func presentedToken(r *http.Request) (string, error) {
	if auth := r.Header.Get("Authorization"); auth != "" {
		scheme, token, _ := strings.Cut(auth, " ")
		if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
			return "", errors.New("the Authorization header must be `Bearer <token>`")
		}
		return strings.TrimSpace(token), nil
	}
	if c, err := r.Cookie(CookieName); err == nil && c.Value != "" {
		return c.Value, nil
	}
	return "", errors.New("sign in first: send `Authorization: Bearer <token>`, or open a login link (" + signInHint + ")")
}

// speaksAs makes the message's sender the caller's: a body that names
// another sender is refused with 403. In none mode the body's sender
// stands, and is never an owner by the adapter's word.
func speaksAs(w http.ResponseWriter, who *Claims, senderID, senderName *string) bool {
	if who == nil {
		return true
	}
	if *senderID != "" && *senderID != who.Sub {
		writeError(w, http.StatusForbidden, fmt.Sprintf("sender_id %q is not the signed-in sender %q: leave sender_id out, the token says who speaks", *senderID, who.Sub))
		return false
	}
	*senderID, *senderName = who.Sub, who.DisplayName()
	return true
}

// Me is the body of GET /api/me: how the page should show who speaks.
type Me struct {
	Auth     AuthMode `json:"auth"`
	SenderID string   `json:"sender_id,omitempty"`
	Name     string   `json:"name,omitempty"`
	Owner    bool     `json:"owner"`
	// Chats are the chats the sign-in reaches; AllChats, every chat.
	Chats    []string `json:"chats,omitempty"`
	AllChats bool     `json:"all_chats,omitempty"`
}

func (s *Server) getMe(w http.ResponseWriter, r *http.Request) {
	who, ok := s.caller(w, r, "")
	if !ok {
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	if who == nil {
		writeJSON(w, http.StatusOK, Me{Auth: AuthNone})
		return
	}
	writeJSON(w, http.StatusOK, Me{Auth: AuthToken, SenderID: who.Sub, Name: who.DisplayName(), Owner: who.Owner, Chats: who.Reach(), AllChats: who.AllChats})
}

// login takes a one-time login link (GET /login?t=...): it sets the
// cookie holding a user token for the same sign-in and sends the browser
// to the page.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	// The link's token must not travel on as a Referer, nor be cached.
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Cache-Control", "no-store")
	// A HEAD (a link checker's) must not use the link up; GET routes
	// take HEAD too.
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	if s.cfg.Auth == AuthNone {
		loginRefused(w, http.StatusNotFound, "this gateway does not sign users in (REPLYFLOW_WEBCHAT_AUTH=none); open / instead")
		return
	}
	now := s.cfg.Now()
	link, err := s.signer.Verify(r.URL.Query().Get("t"), KindLogin, now)
	switch {
	case err != nil:
		loginRefused(w, http.StatusUnauthorized, err.Error())
		return
	case time.Unix(link.ExpiresAt, 0).After(now.Add(LoginLinkTTL + clockSkew)):
		loginRefused(w, http.StatusUnauthorized, "the link is valid for longer than login links may be")
		return
	case link.SignInExpiresAt != 0 && !now.Before(time.Unix(link.SignInExpiresAt, 0)):
		loginRefused(w, http.StatusUnauthorized, "the sign-in it grants has expired")
		return
	}
	switch s.usedLinks.use(link.ID, time.Unix(link.ExpiresAt, 0), now) {
	case linkUsed:
		loginRefused(w, http.StatusUnauthorized, "the link was used already; each link works once")
		return
	case linksFull:
		s.cfg.Logger.Warn("web chat sign-in refused: too many login links used recently", "limit", maxUsedLinks)
		loginRefused(w, http.StatusServiceUnavailable, fmt.Sprintf("more than %d links were used in the last 15 minutes; try again in a few minutes", maxUsedLinks))
		return
	}
	user := Claims{Sub: link.Sub, Name: link.Name, Owner: link.Owner, Chats: link.Chats, AllChats: link.AllChats,
		IssuedAt: now.Unix(), ExpiresAt: link.SignInExpiresAt, Kind: KindUser}
	token, err := s.signer.Sign(user)
	if err != nil { // the link's own claims were valid, so this is a bug
		loginRefused(w, http.StatusInternalServerError, "the sign-in could not be issued: "+err.Error())
		return
	}
	expires := time.Time{}
	if user.ExpiresAt != 0 {
		expires = time.Unix(user.ExpiresAt, 0)
	}
	http.SetCookie(w, signInCookie(r, token, expires))
	s.cfg.Logger.Info("web chat user signed in with a login link", "sender", user.Sub, "owner", user.Owner)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func loginRefused(w http.ResponseWriter, status int, reason string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, "This sign-in link cannot be used: "+reason+".\n\n"+
		"Ask for a new link: "+signInHint+". Each link works once, within 15 minutes.\n")
}

// logout clears the cookie (POST /logout). A Bearer token stays good:
// only rotating REPLYFLOW_WEBCHAT_AUTH_KEY revokes tokens.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	c := signInCookie(r, "", time.Time{})
	c.MaxAge = -1
	http.SetCookie(w, c)
	w.WriteHeader(http.StatusNoContent)
}

// signInCookie holds a user token. HttpOnly keeps it from the page's
// scripts; SameSite=Strict keeps other sites' pages from sending it.
// expires zero is a sign-in without expiry: as long as browsers keep one.
func signInCookie(r *http.Request, token string, expires time.Time) *http.Cookie {
	c := &http.Cookie{Name: CookieName, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: overTLS(r)}
	if expires.IsZero() {
		c.MaxAge = 400 * 24 * 60 * 60
	} else {
		c.Expires = expires
	}
	return c
}

// overTLS: the browser reached the gateway over TLS, itself or through a
// proxy that says so.
func overTLS(r *http.Request) bool {
	proto, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	return r.TLS != nil || strings.EqualFold(strings.TrimSpace(proto), "https")
}

type linkUse int

const (
	linkFresh linkUse = iota
	linkUsed
	linksFull
)

// usedLinks remembers the login links used, each until it expires, so a
// link works once per gateway process (a restart forgets them: a link
// used before it can be used once more within its 15 minutes).
type usedLinks struct {
	mu    sync.Mutex
	limit int
	until map[string]time.Time
}

func newUsedLinks(limit int) *usedLinks {
	return &usedLinks{limit: limit, until: map[string]time.Time{}}
}

// use records id as used until expires. When the set is full of links
// not yet expired it refuses rather than forget one, which would let that
// one be used again.
func (u *usedLinks) use(id string, expires, now time.Time) linkUse {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, seen := u.until[id]; seen {
		return linkUsed
	}
	if len(u.until) >= u.limit {
		for k, t := range u.until {
			if !now.Before(t) {
				delete(u.until, k)
			}
		}
		if len(u.until) >= u.limit {
			return linksFull
		}
	}
	u.until[id] = expires
	return linkFresh
}
