package webchat

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheckListenerKeepsNoneModeOnLoopbackAndTokenModeKeyed(t *testing.T) {
	loopback4 := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	loopback6 := &net.TCPAddr{IP: net.IPv6loopback, Port: 8080}
	everywhere := &net.TCPAddr{IP: net.IPv4zero, Port: 8080}
	lan := &net.TCPAddr{IP: net.IPv4(192, 168, 1, 5), Port: 8080}

	none := &Platform{On: true, Auth: "none"}
	assert.NoError(t, none.CheckListener(loopback4))
	assert.NoError(t, none.CheckListener(loopback6))
	for _, addr := range []net.Addr{everywhere, lan} {
		err := none.CheckListener(addr)
		assert.ErrorContains(t, err, "REPLYFLOW_WEBCHAT_AUTH=none is allowed only on a loopback address", addr.String())
		assert.ErrorContains(t, err, addr.String())
	}

	keyless := &Platform{On: true, Auth: "token"}
	err := keyless.CheckListener(loopback4)
	assert.ErrorContains(t, err, "REPLYFLOW_WEBCHAT_AUTH_KEY is not set")
	assert.ErrorContains(t, err, "openssl rand -base64 32")
	assert.ErrorContains(t, err, "REPLYFLOW_WEBCHAT_AUTH=none", "it names the loopback alternative")

	keyed := &Platform{On: true, Auth: "token", AuthKey: testAuthKey}
	assert.NoError(t, keyed.CheckListener(everywhere))
	assert.NoError(t, (&Platform{On: false, Auth: "none"}).CheckListener(everywhere), "a web chat that is off is not served")
}

func TestValidateNamesBadAuthSettings(t *testing.T) {
	assert.Empty(t, (&Platform{Auth: "token"}).Validate(), "the worker needs no key")
	errs := (&Platform{Auth: "password", AuthKey: "short"}).Validate()
	if assert.Len(t, errs, 2) {
		assert.ErrorContains(t, errs[0], `REPLYFLOW_WEBCHAT_AUTH must be token or none, got "password"`)
		assert.ErrorContains(t, errs[1], "REPLYFLOW_WEBCHAT_AUTH_KEY is 5 bytes, at least 32")
	}
}

func TestValidateRefusesTheExamplesPlaceholderBotToken(t *testing.T) {
	errs := (&Platform{Auth: "token", BotToken: "change-me"}).Validate()
	if assert.Len(t, errs, 1) {
		assert.ErrorContains(t, errs[0], "REPLYFLOW_WEBCHAT_BOT_TOKEN is the example's placeholder")
	}
	assert.Empty(t, (&Platform{Auth: "token", BotToken: "a-real-secret"}).Validate())
}
