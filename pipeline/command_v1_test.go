package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parseMessageFingerprint is the SHA-256 of ParseMessage's answers over
// frozenMessageInputs, taken from the parser as it was at 5245c0a.
const parseMessageFingerprint = "4db627653f401b247e6977c272c3f1d116e084aa911e611a8e892400cc6d7c3f"

// Running sessions replay with ParseMessage (the workflow parses every
// message with it), so its answers must never change, even when helpers
// it shares with ParseMessageV2 do: its answers over thousands of inputs
// made of commands, directives and their look-alikes are pinned. A change
// here means ParseMessage or a helper of it was changed: undo that change.
func TestParseMessageIsFrozen(t *testing.T) {
	assert.Equal(t, parseMessageFingerprint, parsedFingerprint(ParseMessage),
		"ParseMessage's answers changed; they must never change (running sessions replay with it)")
}

// parsedFingerprint hashes the fields ParseMessage has always had, named
// one by one, so a field added to Parsed for V2 does not move it.
func parsedFingerprint(parse func(string) Parsed) string {
	h := sha256.New()
	for _, text := range frozenMessageInputs() {
		p := parse(text)
		fmt.Fprintf(h, "%q|%q|%v|%q|%q|%q|%q|%v|%q|%q\x00", p.Command, queueKey(p.Queue), p.QueueReset,
			decisionKey(p.Decision), p.Code, p.Activation, p.Model, p.ModelReset, p.Text, p.Error)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func queueKey(q *QueuePatch) string {
	if q == nil {
		return "nil"
	}
	var b strings.Builder
	if q.Mode != nil {
		fmt.Fprintf(&b, "mode=%s;", *q.Mode)
	}
	if q.Debounce != nil {
		fmt.Fprintf(&b, "debounce=%d;", *q.Debounce)
	}
	if q.Cap != nil {
		fmt.Fprintf(&b, "cap=%d;", *q.Cap)
	}
	if q.Drop != nil {
		fmt.Fprintf(&b, "drop=%s;", *q.Drop)
	}
	return b.String()
}

func decisionKey(d *Decision) string {
	if d == nil {
		return "nil"
	}
	return d.ID + "|" + d.Decision + "|" + d.Reason + "|" + d.By
}

// frozenMessageInputs are 6000 pseudo-random messages, from a fixed seed,
// made of every command, stop and claim word, directive and look-alike,
// with the white space, bot names, colons and code marks around them.
func frozenMessageInputs() []string {
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

// ParseMessage never sets ParseMessageV2's fields, so IsDirective, which
// reads Directives too, answers for it what it always did.
func TestParseMessageLeavesV2FieldsZero(t *testing.T) {
	for _, text := range frozenMessageInputs() {
		p := ParseMessage(text)
		require.False(t, p.Directives.Any() || p.DirectivesOnly || p.Focus != "" || p.Send != nil, "%q: %+v", text, p)
		require.Equal(t, p.Command != "" || p.Queue != nil || p.Error != "", p.IsDirective(), "%q", text)
	}
}
