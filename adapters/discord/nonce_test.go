package discord

import (
	"regexp"
	"testing"
)

func TestNonceIsStableShortAndDistinct(t *testing.T) {
	keys := []string{"session:discord:9:1/turn-1/0", "session:discord:9:1/turn-1/1", "session:discord:9:1/turn-2/0",
		"session:discord:9:2/turn-1/0", "session:discord:9:1/reply/42/notice-1", "x"}
	plain := regexp.MustCompile(`^[a-z2-7]{1,25}$`)
	seen := map[string]string{}
	for _, key := range keys {
		n := Nonce(key)
		if n != Nonce(key) {
			t.Errorf("Nonce(%q) changes between calls", key)
		}
		if !plain.MatchString(n) {
			t.Errorf("Nonce(%q) = %q, want 1 to 25 base32 characters", key, n)
		}
		if other, dup := seen[n]; dup {
			t.Errorf("keys %q and %q share the nonce %q", key, other, n)
		}
		seen[n] = key
	}
	if Nonce("") != "" {
		t.Errorf("Nonce(\"\") = %q, want none", Nonce(""))
	}
	// Pinned (SHA-256's first 15 bytes in base32): a change would make
	// the chunks in flight during a deploy post twice.
	if got, want := Nonce("session:discord:9:1/turn-1/0"), "2tu5lnwrf57s7mhfjq7trdtl"; got != want {
		t.Errorf("Nonce = %q, want %q", got, want)
	}
}
