package slack

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestVerifyRequest(t *testing.T) {
	const secret = "8f742231b10e8888abcd99yyyzzz85a5"
	body := []byte(`{"type":"event_callback","event":{"type":"message","text":"hi"}}`)
	sent := time.Unix(1_700_000_000, 0)
	stamp := strconv.FormatInt(sent.Unix(), 10)
	signed := func(stamp, signature string) http.Header {
		h := http.Header{}
		if stamp != "" {
			h.Set(HeaderTimestamp, stamp)
		}
		if signature != "" {
			h.Set(HeaderSignature, signature)
		}
		return h
	}
	good := SignatureHeader(secret, stamp, body)
	cases := []struct {
		name   string
		header http.Header
		body   []byte
		secret string
		now    time.Time
		want   error
	}{
		{"good", signed(stamp, good), body, secret, sent, nil},
		{"good at the window's old edge", signed(stamp, good), body, secret, sent.Add(SignatureWindow), nil},
		{"good at the window's future edge", signed(stamp, good), body, secret, sent.Add(-SignatureWindow), nil},
		{"other secret", signed(stamp, SignatureHeader("other", stamp, body)), body, secret, sent, ErrBadSignature},
		{"body changed", signed(stamp, good), []byte(`{"type":"event_callback"}`), secret, sent, ErrBadSignature},
		{"not hex", signed(stamp, "v0=zz"), body, secret, sent, ErrBadSignature},
		{"other version", signed(stamp, "v1="+good[3:]), body, secret, sent, ErrBadSignature},
		{"stale", signed(stamp, good), body, secret, sent.Add(SignatureWindow + time.Second), ErrStaleTimestamp},
		{"future", signed(stamp, good), body, secret, sent.Add(-SignatureWindow - time.Second), ErrFutureTimestamp},
		// A captured request sent again later: its signature only holds
		// with its own timestamp, which is outside the window by then.
		{"replayed late", signed(stamp, good), body, secret, sent.Add(time.Hour), ErrStaleTimestamp},
		// Or with a fresh timestamp, which the signature does not cover.
		{"replayed with a new timestamp", signed(strconv.FormatInt(sent.Add(time.Hour).Unix(), 10), good), body, secret, sent.Add(time.Hour), ErrBadSignature},
		{"missing signature", signed(stamp, ""), body, secret, sent, ErrMissingSignature},
		{"missing timestamp", signed("", good), body, secret, sent, ErrMissingTimestamp},
		{"timestamp not a number", signed("soon", good), body, secret, sent, ErrBadTimestamp},
		{"timestamp in milliseconds", signed(stamp+"000", good), body, secret, sent, ErrFutureTimestamp},
		{"no secret configured", signed(stamp, good), body, "", sent, ErrNoSigningSecret},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := VerifyRequest(c.header, c.body, c.secret, c.now)
			if c.want == nil {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, c.want)
		})
	}
}

// Slack's documented example: https://api.slack.com/authentication/verifying-requests-from-slack
func TestSignatureMatchesSlacksExample(t *testing.T) {
	body := "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	got := SignatureHeader("8f742231b10e8888abcd99yyyzzz85a5", "1531420618", []byte(body))
	assert.Equal(t, "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503", got)
}
