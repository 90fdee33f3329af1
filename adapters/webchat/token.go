package webchat

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// A web chat token says who a user is, signed by the gateway's key
// (REPLYFLOW_WEBCHAT_AUTH_KEY):
//
//	v1.<base64url(JSON claims)>.<base64url(HMAC-SHA256 of "v1.<claims>")>
//
// Tokens are not stored anywhere: whoever holds the key can issue them,
// and the only way to revoke issued tokens is to rotate the key (every
// token signed with the old one is refused from then on).
const tokenVersion = "v1"

// Token kinds: a user token is a sign-in (a Bearer token, or the cookie);
// a login token is the one-time link that sets the cookie.
const (
	KindUser  = "user"
	KindLogin = "login"
)

const (
	// MinAuthKeyBytes is the shortest REPLYFLOW_WEBCHAT_AUTH_KEY taken:
	// HMAC-SHA256 wants a key of at least its output's size.
	MinAuthKeyBytes = 32
	// maxTokenBytes keeps a token within what a cookie can hold, and
	// bounds the work an unauthenticated request can ask for.
	maxTokenBytes = 4000
	// maxTokenChats bounds Claims.Chats.
	maxTokenChats = 20
	// LoginLinkTTL is how long a login link is good for.
	LoginLinkTTL = 15 * time.Minute
	// clockSkew is how far a login link's expiry may lie beyond
	// LoginLinkTTL, for an issuing clock a little ahead of the gateway's.
	clockSkew = time.Minute
)

// Claims are what a token says. Times are Unix seconds; 0 means unset.
type Claims struct {
	// Sub is the sender ID every message of the token's holder carries.
	Sub  string `json:"sub"`
	Name string `json:"name,omitempty"`
	// Owner: the holder is an owner (Inbound.SenderIsOwner).
	Owner bool `json:"owner,omitempty"`
	// Chats confines the token to these chats. A token without chats
	// reaches one chat: its sender's own, whose chat ID is Sub.
	Chats []string `json:"chats,omitempty"`
	// AllChats: the token reaches every chat, everyone's history
	// included. Only an explicit `--all-chats` issues one; it excludes
	// Chats.
	AllChats  bool   `json:"all_chats,omitempty"`
	IssuedAt  int64  `json:"iat"`
	ExpiresAt int64  `json:"exp,omitempty"`
	Kind      string `json:"kind"`
	// ID makes a login link one-time: the gateway refuses an ID it has
	// seen (login tokens only).
	ID string `json:"jti,omitempty"`
	// SignInExpiresAt is, in a login token, when the sign-in it grants
	// (the cookie's user token) expires; 0 means never.
	SignInExpiresAt int64 `json:"sexp,omitempty"`
}

// AllowsChat says whether the token may be used in chat: any chat with
// AllChats, else one of Chats, else only the chat named after its sender.
// Equality, not a prefix: sender IDs may extend one another ("alice",
// "alice.b"), so a prefix rule would hand one sender another's chats.
func (c Claims) AllowsChat(chat string) bool {
	switch {
	case c.AllChats:
		return true
	case len(c.Chats) > 0:
		return slices.Contains(c.Chats, chat)
	}
	return chat == c.Sub
}

// Reach is the chats the token reaches, nil with AllChats (every chat).
func (c Claims) Reach() []string {
	switch {
	case c.AllChats:
		return nil
	case len(c.Chats) > 0:
		return c.Chats
	}
	return []string{c.Sub}
}

// DisplayName is the name the token's messages carry: its name, else its
// sender ID.
func (c Claims) DisplayName() string {
	if c.Name != "" {
		return c.Name
	}
	return c.Sub
}

func (c Claims) validate() error {
	if err := pipeline.ValidateID("the token's sub (sender ID)", c.Sub); err != nil {
		return err
	}
	if len(c.Name) > pipeline.MaxNameBytes || !utf8.ValidString(c.Name) {
		return fmt.Errorf("the token's name must be valid UTF-8 of at most %d bytes", pipeline.MaxNameBytes)
	}
	if c.AllChats && len(c.Chats) > 0 {
		return errors.New("a token reaches either the chats it names or all chats, not both")
	}
	if len(c.Chats) > maxTokenChats {
		return fmt.Errorf("the token names %d chats, the limit is %d", len(c.Chats), maxTokenChats)
	}
	for _, chat := range c.Chats {
		if err := pipeline.ValidateID("the token's chat", chat); err != nil {
			return err
		}
	}
	switch c.Kind {
	case KindUser:
	case KindLogin:
		if c.ID == "" || c.ExpiresAt == 0 {
			return errors.New("a login token needs an ID (jti) and an expiry")
		}
	default:
		return fmt.Errorf("the token's kind must be %s or %s, got %q", KindUser, KindLogin, c.Kind)
	}
	return nil
}

// Signer issues and verifies tokens with one key.
type Signer struct{ key []byte }

// NewSigner takes the key as REPLYFLOW_WEBCHAT_AUTH_KEY holds it; its bytes
// are the HMAC key, so a base64 string (`openssl rand -base64 32`) will do.
func NewSigner(key string) (*Signer, error) {
	if key == "" {
		return nil, errors.New("REPLYFLOW_WEBCHAT_AUTH_KEY is not set: generate one with `openssl rand -base64 32` and give the gateway (and `replyflow webchat token`) the same value")
	}
	if len(key) < MinAuthKeyBytes {
		return nil, fmt.Errorf("REPLYFLOW_WEBCHAT_AUTH_KEY is %d bytes, at least %d are needed: generate one with `openssl rand -base64 32`", len(key), MinAuthKeyBytes)
	}
	if adapters.Placeholder(key) {
		return nil, errors.New("REPLYFLOW_WEBCHAT_AUTH_KEY is the example's placeholder, which anyone can read and sign tokens with (an owner's, for every chat): generate one with `openssl rand -base64 32`")
	}
	return &Signer{key: []byte(key)}, nil
}

var b64 = base64.RawURLEncoding.Strict()

// Sign issues a token saying c.
func (s *Signer) Sign(c Claims) (string, error) {
	if err := c.validate(); err != nil {
		return "", err
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	signed := tokenVersion + "." + b64.EncodeToString(payload)
	token := signed + "." + b64.EncodeToString(s.mac(signed))
	if len(token) > maxTokenBytes {
		return "", fmt.Errorf("the token would be %d bytes, the limit is %d: name fewer chats", len(token), maxTokenBytes)
	}
	return token, nil
}

func (s *Signer) mac(signed string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(signed))
	return m.Sum(nil)
}

// Errors of Verify, for callers that answer them differently. Their text
// never includes the token.
var (
	ErrTokenMalformed = errors.New("the token is not a replyflow web chat token (v1.<claims>.<signature>)")
	ErrTokenSignature = errors.New("the token's signature does not match this gateway's REPLYFLOW_WEBCHAT_AUTH_KEY (forged, or signed with a key since rotated)")
	ErrTokenExpired   = errors.New("the token has expired")
	ErrTokenKind      = errors.New("the token is of the wrong kind")
)

// Verify checks the token's signature, then its claims: valid, of kind,
// and not expired at now.
func (s *Signer) Verify(token, kind string, now time.Time) (Claims, error) {
	if len(token) > maxTokenBytes {
		return Claims{}, ErrTokenMalformed
	}
	version, rest, ok1 := strings.Cut(token, ".")
	payload, sig, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || version != tokenVersion {
		return Claims{}, ErrTokenMalformed
	}
	got, err := b64.DecodeString(sig)
	if err != nil {
		return Claims{}, ErrTokenMalformed
	}
	// hmac.Equal compares in constant time.
	if !hmac.Equal(got, s.mac(version+"."+payload)) {
		return Claims{}, ErrTokenSignature
	}
	data, err := b64.DecodeString(payload)
	if err != nil {
		return Claims{}, ErrTokenMalformed
	}
	var c Claims
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil || dec.More() {
		return Claims{}, ErrTokenMalformed
	}
	if err := c.validate(); err != nil {
		return Claims{}, fmt.Errorf("%w: %w", ErrTokenMalformed, err)
	}
	if c.Kind != kind {
		return Claims{}, fmt.Errorf("%w: it is a %s token where a %s token is needed", ErrTokenKind, c.Kind, kind)
	}
	if c.ExpiresAt != 0 && !now.Before(time.Unix(c.ExpiresAt, 0)) {
		return Claims{}, fmt.Errorf("%w (at %s)", ErrTokenExpired, time.Unix(c.ExpiresAt, 0).UTC().Format(time.RFC3339))
	}
	return c, nil
}

// Issued is what `replyflow webchat token` prints: a user token and a
// login link's token for the same sign-in.
type Issued struct {
	User, Login string
	// LoginExpires is when the login link stops working.
	LoginExpires time.Time
}

// Issue signs a user token for who (Sub, Name, Owner, Chats, AllChats), expiring
// after ttl (0: never), and a one-time login token for the same sign-in,
// valid for LoginLinkTTL.
func (s *Signer) Issue(who Claims, ttl time.Duration, now time.Time) (Issued, error) {
	if ttl < 0 {
		return Issued{}, fmt.Errorf("the token's lifetime must not be negative, got %s", ttl)
	}
	user := Claims{Sub: who.Sub, Name: who.Name, Owner: who.Owner, Chats: who.Chats, AllChats: who.AllChats, IssuedAt: now.Unix(), Kind: KindUser}
	if ttl > 0 {
		user.ExpiresAt = now.Add(ttl).Unix()
	}
	login := user
	login.Kind, login.ID, login.SignInExpiresAt = KindLogin, randomID("l-"), user.ExpiresAt
	login.ExpiresAt = now.Add(LoginLinkTTL).Unix()
	if user.ExpiresAt != 0 {
		login.ExpiresAt = min(login.ExpiresAt, user.ExpiresAt)
	}
	var out Issued
	var err error
	if out.User, err = s.Sign(user); err != nil {
		return Issued{}, err
	}
	if out.Login, err = s.Sign(login); err != nil {
		return Issued{}, err
	}
	out.LoginExpires = time.Unix(login.ExpiresAt, 0)
	return out, nil
}
