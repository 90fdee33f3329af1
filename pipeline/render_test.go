package pipeline

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestCutBytesKeepsValidUTF8WithinTheLimit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"abcdefgh", 6, "abc…"},
		{"ééééé", 6, "é…"}, // é is 2 bytes: a cut never lands inside one
		{"abc", 2, "ab"},   // no room for the mark
	} {
		got := CutBytes(tc.in, tc.n)
		assert.Equal(t, tc.want, got, "%q at %d", tc.in, tc.n)
		assert.True(t, utf8.ValidString(got))
		assert.LessOrEqual(t, len(got), tc.n)
	}
}
