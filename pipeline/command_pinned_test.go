package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parseMessageFingerprint is the SHA-256 of ParseMessage's answers over
// pinnedMessageInputs.
const parseMessageFingerprint = "d29d84b33d8d5843d9baf63e7e37e8451ec320ab3c3f5be27d60d1c347d17a3d"

// The session workflow parses every message with ParseMessage, so its
// answers are part of what open runs replay: a message that was text
// when a run took it and is a command now would turn that run's replay
// another way. Its answers over thousands of inputs made of commands,
// directives and their look-alikes are pinned. A change here means
// ParseMessage or a helper of it was changed: a change of what it
// answers ships in a new release of the session workflow (see
// workflows/releases.go), which pins the new answers.
func TestParseMessageIsPinned(t *testing.T) {
	assert.Equal(t, parseMessageFingerprint, parsedFingerprint(t),
		"ParseMessage's answers changed; open sessions replay with them (workflows/releases.go)")
}

// parsedFingerprint hashes the JSON of each answer, every field of it.
func parsedFingerprint(t *testing.T) string {
	h := sha256.New()
	for _, text := range pinnedMessageInputs() {
		b, err := json.Marshal(ParseMessage(text, ParseOptions{}))
		require.NoError(t, err)
		h.Write(append(b, 0))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// pinnedMessageInputs are 6000 pseudo-random messages, from a fixed seed,
// made of every command, stop and claim word, directive and look-alike,
// with the white space, bot names, colons and code marks around them.
func pinnedMessageInputs() []string {
	parts := []string{"/queue collect", "/queue steer cap:3", "/status", "/STOP", "/new", "/reset", "/queue", "/model", "/activation", "/approve", "/reject",
		"/think", "/verbose", "/usage", "/help", "/commands", "/whoami", "/context", "/compact", "/send", "/export",
		"/thinking", "/models", "/", "@bot", "@", ":", " ", "  ", "\n", "\t", "\r\n", "stop", "Wait...", "esc!",
		"claim-0a1b2c3d", "claim-", "collect", "steer-backlog", "interrupt", "default", "reset", "debounce:2s",
		"debounce:1500", "cap:3", "cap:0", "drop:old", "color:red", "a:b:c", "openai/gpt-4o", "anthropic/", "gpt-4o",
		"mention", "smart", "loud", "p3-1", "high", "low", "off", "on", "full", "tokens", "ultra", "hello", "word",
		"https://x.y/think/high", "src/think/high.go", "`", "```", "~~~", "é", "😀", ".", ",", "!"}
	rng := rand.New(rand.NewSource(18))
	out := make([]string, 0, 6000)
	for range 6000 {
		var b strings.Builder
		if rng.Intn(2) == 0 { // most commands are at the start
			b.WriteString(parts[rng.Intn(21)])
			b.WriteString([]string{" ", "", "\n", "@bot "}[rng.Intn(4)])
		}
		for n := 1 + rng.Intn(8); n > 0; n-- {
			b.WriteString(parts[rng.Intn(len(parts))])
			if rng.Intn(3) > 0 {
				b.WriteByte(' ')
			}
		}
		out = append(out, b.String())
	}
	return out
}
