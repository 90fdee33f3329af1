package codec

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// EnvKeys is the variable the keys are read from; errors name it.
const EnvKeys = "REPLYFLOW_CODEC_KEYS"

// KeySize is the length of an AES-256 key in bytes.
const KeySize = 32

// keyID is what a key ID may be: short, and safe in metadata, logs and
// file names.
var keyID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,32}$`)

// keyHint says how to make a key, for errors.
const keyHint = "generate one with `openssl rand -base64 32`"

// Key is one named AES-256 key. Printing it with any verb shows its ID
// only, never its material.
type Key struct {
	ID     string
	secret []byte
}

// NewKey names a 32-byte secret.
func NewKey(id string, secret []byte) (Key, error) {
	if !keyID.MatchString(id) {
		return Key{}, fmt.Errorf("key ID %q: use 1 to 32 of A-Z a-z 0-9 . _ -", id)
	}
	if len(secret) != KeySize {
		return Key{}, fmt.Errorf("key %q is %d bytes; AES-256 needs %d: %s", id, len(secret), KeySize, keyHint)
	}
	return Key{ID: id, secret: append([]byte(nil), secret...)}, nil
}

// GenerateKey makes a new random key named id.
func GenerateKey(id string) (Key, error) {
	secret := make([]byte, KeySize)
	if _, err := rand.Read(secret); err != nil {
		return Key{}, fmt.Errorf("generate a codec key: %w", err)
	}
	return NewKey(id, secret)
}

// Format prints the key's ID only, whatever the verb (%v, %+v, %#v, %s).
func (k Key) Format(f fmt.State, _ rune) { fmt.Fprintf(f, "codec key %s", k.ID) }

// ParseKeys reads REPLYFLOW_CODEC_KEYS: comma-separated "id:base64key"
// entries, each key 32 bytes (standard or URL base64, padded or not). The
// first key encrypts; all decrypt. Its errors name the entry and its key
// ID, never what was given as the key.
func ParseKeys(value string) ([]Key, error) {
	var keys []Key
	seen := map[string]bool{}
	n := 0
	for entry := range strings.SplitSeq(value, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		n++
		id, encoded, ok := strings.Cut(entry, ":")
		id = strings.TrimSpace(id)
		if !ok {
			return nil, fmt.Errorf("%s entry %d is not id:base64key (for example k1:<key>; %s)", EnvKeys, n, keyHint)
		}
		if !keyID.MatchString(id) {
			// Not quoted: a malformed entry may have the key where the ID goes.
			return nil, fmt.Errorf("%s entry %d: the key ID before the colon must be 1 to 32 of A-Z a-z 0-9 . _ -", EnvKeys, n)
		}
		if seen[id] {
			return nil, fmt.Errorf("%s: key ID %q appears twice; give each key its own ID", EnvKeys, id)
		}
		seen[id] = true
		secret, err := decodeBase64(strings.TrimSpace(encoded))
		if err != nil {
			return nil, fmt.Errorf("%s entry %d (key ID %q): the key is not base64: %s", EnvKeys, n, id, keyHint)
		}
		if len(secret) != KeySize {
			return nil, fmt.Errorf("%s entry %d (key ID %q): the key is %d bytes; AES-256 needs %d: %s", EnvKeys, n, id, len(secret), KeySize, keyHint)
		}
		keys = append(keys, Key{ID: id, secret: secret})
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s has no key: set it to id:base64key entries, the newest first (%s)", EnvKeys, keyHint)
	}
	return keys, nil
}

// FormatKeys is the REPLYFLOW_CODEC_KEYS value of keys. It is key
// material: write it only where the keys are kept.
func FormatKeys(keys []Key) string {
	entries := make([]string, len(keys))
	for i, k := range keys {
		entries[i] = k.ID + ":" + base64.StdEncoding.EncodeToString(k.secret)
	}
	return strings.Join(entries, ",")
}

// KeyIDs are the keys' IDs, in order, for messages.
func KeyIDs(keys []Key) []string {
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = k.ID
	}
	return ids
}

func decodeBase64(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}
