package codec

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testKey(t testing.TB, id string) Key {
	t.Helper()
	secret := sha256.Sum256([]byte(id))
	k, err := NewKey(id, secret[:])
	require.NoError(t, err)
	return k
}

func TestParseKeysReadsEntriesInOrder(t *testing.T) {
	k1, k2 := testKey(t, "k1"), testKey(t, "k2")
	value := " k2:" + base64.StdEncoding.EncodeToString(k2.secret) + " , k1:" + base64.RawURLEncoding.EncodeToString(k1.secret) + ","
	keys, err := ParseKeys(value)
	require.NoError(t, err)
	assert.Equal(t, []string{"k2", "k1"}, KeyIDs(keys), "the first key stays first: it encrypts")
	assert.Equal(t, []Key{k2, k1}, keys)

	again, err := ParseKeys(FormatKeys(keys))
	require.NoError(t, err)
	assert.Equal(t, keys, again, "FormatKeys writes what ParseKeys reads")
}

func TestParseKeysErrorsSayWhatIsWrongWithoutTheKey(t *testing.T) {
	secret := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, KeySize))
	short := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 16))
	for _, c := range []struct{ value, want string }{
		{"", "has no key"},
		{" , ", "has no key"},
		{secret, "entry 1 is not id:base64key"},
		{"k1:" + secret + ",k1:" + secret, `key ID "k1" appears twice`},
		{"k1:" + secret + "," + secret + ":k2", "entry 2: the key ID"},
		{"bad id:" + secret, "entry 1: the key ID"},
		{strings.Repeat("x", 33) + ":" + secret, "entry 1: the key ID"},
		{"k1:not base64!", `entry 1 (key ID "k1"): the key is not base64`},
		{"k1:" + short, `entry 1 (key ID "k1"): the key is 16 bytes; AES-256 needs 32`},
	} {
		_, err := ParseKeys(c.value)
		require.Error(t, err, c.value)
		assert.Contains(t, err.Error(), c.want, c.value)
		assert.Contains(t, err.Error(), EnvKeys, "names the variable to fix")
		assert.NotContains(t, err.Error(), secret, "never shows key material")
		assert.NotContains(t, err.Error(), short, "never shows key material")
	}
}

func TestKeyPrintsItsIDOnly(t *testing.T) {
	k := testKey(t, "k1")
	encoded := base64.StdEncoding.EncodeToString(k.secret)
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%q"} {
		out := fmt.Sprintf(verb, k) + fmt.Sprintf(verb, []Key{k}) + fmt.Sprintf(verb, struct{ K Key }{k})
		assert.Contains(t, out, "k1", verb)
		assert.NotContains(t, out, encoded, verb)
		assert.NotContains(t, out, string(k.secret), verb)
		assert.NotContains(t, out, fmt.Sprintf("%x", k.secret), verb)
		assert.NotContains(t, out, fmt.Sprint(k.secret), verb)
	}
}

func TestNewKeyChecksIDAndLength(t *testing.T) {
	_, err := NewKey("k 1", make([]byte, KeySize))
	assert.ErrorContains(t, err, "use 1 to 32 of")
	_, err = NewKey("k1", make([]byte, 31))
	assert.ErrorContains(t, err, "31 bytes; AES-256 needs 32")
	a, err := GenerateKey("dev")
	require.NoError(t, err)
	b, err := GenerateKey("dev")
	require.NoError(t, err)
	assert.NotEqual(t, a.secret, b.secret, "generated keys are random")
}
