package codec

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// BlobPrefix starts every value Blobs seals: "rfenc1:<key ID>:<base64 of
// nonce and ciphertext>". A value without it was written before
// encryption was turned on, and is read as it is.
const BlobPrefix = "rfenc1:"

// ErrBlobSealed is wrapped by the error of reading a sealed value
// without keys.
var ErrBlobSealed = errors.New("the value is encrypted and no codec key is configured")

// Blobs seals the values the store keeps outside Temporal (the bytes of
// users' files, voice notes' transcripts) with the codec's keys, as
// Codec seals payloads: AES-256-GCM, a random nonce, the first key
// encrypts, every key decrypts. Each value is bound to where it is kept
// (its row and column, the additional data), so a sealed value moved to
// another session's row does not open.
type Blobs struct{ c *Codec }

// NewBlobs builds a sealer: keys[0] encrypts, every key decrypts.
func NewBlobs(keys []Key) (*Blobs, error) {
	c, err := New(keys)
	if err != nil {
		return nil, err
	}
	return &Blobs{c: c}, nil
}

// Seal encrypts plain for the place named by where (a row and column).
func (b *Blobs) Seal(plain []byte, where string) (string, error) {
	id := b.c.encryptWith
	aead := b.c.aeads[id]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("encrypt a stored value: make a nonce: %w", err)
	}
	sealed := aead.Seal(nonce, nonce, plain, blobAD(id, where))
	return BlobPrefix + id + ":" + base64.StdEncoding.EncodeToString(sealed), nil
}

// Open decrypts what Seal made for the same where; a value without
// BlobPrefix is returned as it is. Its errors name the key, never its
// material.
func (b *Blobs) Open(stored, where string) ([]byte, error) {
	if !IsSealedBlob(stored) {
		return []byte(stored), nil
	}
	id, encoded, ok := strings.Cut(strings.TrimPrefix(stored, BlobPrefix), ":")
	if !ok {
		return nil, errors.New("decrypt a stored value: it names no key")
	}
	aead, ok := b.c.aeads[id]
	if !ok {
		return nil, fmt.Errorf("decrypt a stored value: %w: key ID %q (configured: %s); add that key to %s, after the current one",
			ErrUnknownKey, clip(id), strings.Join(b.c.ids, ", "), EnvKeys)
	}
	data, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil || len(data) < aead.NonceSize()+aead.Overhead() {
		return nil, fmt.Errorf("decrypt a stored value sealed with key %q: it is not one (damaged)", id)
	}
	plain, err := aead.Open(nil, data[:aead.NonceSize()], data[aead.NonceSize():], blobAD(id, where))
	if err != nil {
		return nil, fmt.Errorf("decrypt a stored value sealed with key %q: it does not authenticate (it was changed or moved, or key %q is not the key it was sealed with)", id, id)
	}
	return plain, nil
}

// IsSealedBlob is whether a stored value is one Blobs sealed.
func IsSealedBlob(stored string) bool { return strings.HasPrefix(stored, BlobPrefix) }

func blobAD(id, where string) []byte { return []byte(id + "\x00" + where) }
