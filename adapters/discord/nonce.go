package discord

import (
	"crypto/sha256"
	"encoding/base32"
	"strings"
)

// nonceEncoding spells a nonce in lower-case base32 without padding:
// letters and digits only, safe in JSON and logs.
var nonceEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// Nonce is the nonce a chunk is sent with, derived from its idempotency
// key: the first 15 bytes (120 bits) of the key's SHA-256 as 24 base32
// characters, within Discord's 25. The same key gives the same nonce on
// every worker and every attempt, so with enforce_nonce Discord answers
// a retried send with the message it already created. "" for no key.
func Nonce(idempotencyKey string) string {
	if idempotencyKey == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(idempotencyKey))
	return strings.ToLower(nonceEncoding.EncodeToString(sum[:15]))
}
