package hostcheck

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLoopbackNamesOnly(t *testing.T) {
	for _, host := range []string{"", "localhost", "localhost:8080", "LOCALHOST:1", "localhost.", "127.0.0.1", "127.0.0.1:8080", "127.0.0.2:9", "[::1]", "[::1]:8080", "::1"} {
		assert.True(t, Loopback(host), host)
	}
	for _, host := range []string{"evil.example", "evil.example:8080", "127.0.0.1.nip.io:8080", "localhost.evil.example", "10.0.0.1:80", "[::2]:80", "0.0.0.0:8080", "[fe80::1%lo]:80", "localhost:8080:1"} {
		assert.False(t, Loopback(host), host)
	}
}
