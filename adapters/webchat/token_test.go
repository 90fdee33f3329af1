package webchat

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testAuthKey = "0123456789abcdef0123456789abcdef-test-key"

var t0 = time.Unix(1700000000, 0)

func testSigner(t testing.TB) *Signer {
	s, err := NewSigner(testAuthKey)
	require.NoError(t, err)
	return s
}

func TestSignerNeedsALongEnoughKey(t *testing.T) {
	_, err := NewSigner("")
	assert.ErrorContains(t, err, "openssl rand -base64 32")
	_, err = NewSigner(strings.Repeat("k", MinAuthKeyBytes-1))
	assert.ErrorContains(t, err, "at least 32")
	_, err = NewSigner(strings.Repeat("k", MinAuthKeyBytes))
	assert.NoError(t, err)
}

// The committed examples' placeholder is long enough for the length
// check; anyone who read it could sign an owner's token for every chat.
func TestSignerRefusesTheExamplesPlaceholderKey(t *testing.T) {
	_, err := NewSigner("change-me-to-32-random-bytes-base64")
	require.Error(t, err)
	assert.ErrorContains(t, err, "REPLYFLOW_WEBCHAT_AUTH_KEY is the example's placeholder")
	assert.NotContains(t, err.Error(), "change-me-to-32", "the key stays out of the error")
}

func TestTokenRoundTrip(t *testing.T) {
	s := testSigner(t)
	want := Claims{Sub: "alice", Name: "Alice A.", Owner: true, Chats: []string{"room", "ops"}, IssuedAt: t0.Unix(),
		ExpiresAt: t0.Add(time.Hour).Unix(), Kind: KindUser}
	token, err := s.Sign(want)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(token, "v1."), token)
	assert.Len(t, strings.Split(token, "."), 3)

	got, err := s.Verify(token, KindUser, t0.Add(59*time.Minute))
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.True(t, got.AllowsChat("ops"))
	assert.False(t, got.AllowsChat("elsewhere"), "a token confined to chats allows no other")
	assert.True(t, Claims{Sub: "a"}.AllowsChat("a"), "no chats: the sender's own chat")
	assert.False(t, Claims{Sub: "a"}.AllowsChat("anything"), "no chats: no other chat")
	assert.False(t, Claims{Sub: "a"}.AllowsChat("a-2"), "no chats: not a chat its sender ID merely begins")
	assert.True(t, Claims{Sub: "a", AllChats: true}.AllowsChat("anything"), "all chats, asked for")
	assert.Equal(t, "Alice A.", got.DisplayName())
	assert.Equal(t, "bob", Claims{Sub: "bob"}.DisplayName())

	forever, err := s.Sign(Claims{Sub: "bob", Kind: KindUser})
	require.NoError(t, err)
	_, err = s.Verify(forever, KindUser, t0.Add(100*365*24*time.Hour))
	assert.NoError(t, err, "a token without exp does not expire")
}

func TestTamperedOrForeignTokensAreRefused(t *testing.T) {
	s := testSigner(t)
	token, err := s.Sign(Claims{Sub: "alice", Kind: KindUser, IssuedAt: t0.Unix()})
	require.NoError(t, err)
	parts := strings.Split(token, ".")

	// The same signature over claims that make alice an owner.
	owner, _ := json.Marshal(Claims{Sub: "alice", Owner: true, Kind: KindUser, IssuedAt: t0.Unix()})
	payloadSwapped := parts[0] + "." + base64.RawURLEncoding.EncodeToString(owner) + "." + parts[2]
	mac, _ := base64.RawURLEncoding.DecodeString(parts[2])
	mac[0] ^= 1
	macFlipped := parts[0] + "." + parts[1] + "." + base64.RawURLEncoding.EncodeToString(mac)
	other, err := NewSigner(strings.Repeat("z", 44))
	require.NoError(t, err)
	foreign, err := other.Sign(Claims{Sub: "alice", Kind: KindUser})
	require.NoError(t, err)

	for name, c := range map[string]struct {
		token string
		want  error
	}{
		"payload changed": {payloadSwapped, ErrTokenSignature},
		"MAC changed":     {macFlipped, ErrTokenSignature},
		"another key":     {foreign, ErrTokenSignature},
		"no MAC":          {parts[0] + "." + parts[1] + ".", ErrTokenSignature},
		"two parts":       {parts[0] + "." + parts[1], ErrTokenMalformed},
		"v2":              {"v2." + parts[1] + "." + parts[2], ErrTokenMalformed},
		"empty":           {"", ErrTokenMalformed},
		"MAC not base64":  {parts[0] + "." + parts[1] + ".***", ErrTokenMalformed},
		"huge":            {strings.Repeat("a", maxTokenBytes+1), ErrTokenMalformed},
	} {
		_, err := s.Verify(c.token, KindUser, t0)
		assert.ErrorIs(t, err, c.want, name)
		if err != nil {
			assert.NotContains(t, err.Error(), parts[2], "%s: the error never repeats the token", name)
		}
	}
}

func TestExpiredAndWrongKindTokensAreRefused(t *testing.T) {
	s := testSigner(t)
	token, err := s.Sign(Claims{Sub: "alice", Kind: KindUser, ExpiresAt: t0.Unix()})
	require.NoError(t, err)
	_, err = s.Verify(token, KindUser, t0.Add(-time.Second))
	assert.NoError(t, err)
	_, err = s.Verify(token, KindUser, t0)
	assert.ErrorIs(t, err, ErrTokenExpired, "exp is the first instant it is refused")

	issued, err := s.Issue(Claims{Sub: "alice"}, time.Hour, t0)
	require.NoError(t, err)
	_, err = s.Verify(issued.Login, KindUser, t0)
	assert.ErrorIs(t, err, ErrTokenKind, "a login link is no bearer token")
	_, err = s.Verify(issued.User, KindLogin, t0)
	assert.ErrorIs(t, err, ErrTokenKind, "a bearer token is no login link")
}

func TestIssueMakesAUserTokenAndAOneTimeLink(t *testing.T) {
	s := testSigner(t)
	issued, err := s.Issue(Claims{Sub: "boss", Name: "Boss", Owner: true, Chats: []string{"ops"}}, 720*time.Hour, t0)
	require.NoError(t, err)
	user, err := s.Verify(issued.User, KindUser, t0)
	require.NoError(t, err)
	assert.Equal(t, Claims{Sub: "boss", Name: "Boss", Owner: true, Chats: []string{"ops"}, IssuedAt: t0.Unix(),
		ExpiresAt: t0.Add(720 * time.Hour).Unix(), Kind: KindUser}, user)
	login, err := s.Verify(issued.Login, KindLogin, t0)
	require.NoError(t, err)
	assert.Equal(t, t0.Add(LoginLinkTTL).Unix(), login.ExpiresAt)
	assert.Equal(t, t0.Add(LoginLinkTTL), issued.LoginExpires)
	assert.Equal(t, user.ExpiresAt, login.SignInExpiresAt)
	assert.NotEmpty(t, login.ID)
	again, err := s.Issue(Claims{Sub: "boss"}, 0, t0)
	require.NoError(t, err)
	second, err := s.Verify(again.Login, KindLogin, t0)
	require.NoError(t, err)
	assert.NotEqual(t, login.ID, second.ID, "every link has its own ID")
	assert.Zero(t, second.SignInExpiresAt, "ttl 0: the sign-in never expires")

	short, err := s.Issue(Claims{Sub: "boss"}, time.Minute, t0)
	require.NoError(t, err)
	assert.Equal(t, t0.Add(time.Minute), short.LoginExpires, "a link outlives no sign-in it grants")
}

func TestSignRefusesBadClaims(t *testing.T) {
	s := testSigner(t)
	for name, c := range map[string]Claims{
		"no sub":           {Kind: KindUser},
		"sub with a space": {Sub: "a b", Kind: KindUser},
		"bad chat":         {Sub: "a", Chats: []string{"x/y"}, Kind: KindUser},
		"too many chats":   {Sub: "a", Chats: strings.Split(strings.Repeat("c,", maxTokenChats)+"c", ","), Kind: KindUser},
		"no kind":          {Sub: "a"},
		"login, no jti":    {Sub: "a", Kind: KindLogin, ExpiresAt: 1},
		"login, no exp":    {Sub: "a", Kind: KindLogin, ID: "l-1"},
		"bad name":         {Sub: "a", Name: "\xff", Kind: KindUser},
		"chats and all":    {Sub: "a", Chats: []string{"c"}, AllChats: true, Kind: KindUser},
	} {
		_, err := s.Sign(c)
		assert.Error(t, err, name)
	}
}

// FuzzVerifyToken hands the parser anything: it must not panic, and what
// it accepts must be a valid user token that signs back to a token it
// accepts as the same claims.
func FuzzVerifyToken(f *testing.F) {
	s := testSigner(f)
	good, err := s.Sign(Claims{Sub: "alice", Name: "A", Chats: []string{"room"}, Kind: KindUser, ExpiresAt: t0.Add(time.Hour).Unix()})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add("v1..")
	f.Add("v1.e30.")
	f.Add("v1.." + strings.Repeat("A", 43))
	f.Add(strings.Replace(good, ".", "..", 1))
	f.Fuzz(func(t *testing.T, token string) {
		c, err := s.Verify(token, KindUser, t0)
		if err != nil {
			return
		}
		if verr := c.validate(); verr != nil || c.Kind != KindUser {
			t.Fatalf("accepted invalid claims %+v: %v", c, verr)
		}
		again, err := s.Sign(c)
		if err != nil {
			t.Fatalf("accepted claims %+v that cannot be signed: %v", c, err)
		}
		if back, err := s.Verify(again, KindUser, t0); err != nil || back.Sub != c.Sub {
			t.Fatalf("re-signed claims %+v verify as %+v, %v", c, back, err)
		}
	})
}
