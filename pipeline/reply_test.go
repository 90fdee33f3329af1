package pipeline

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNormalizeReply(t *testing.T) {
	cases := []struct {
		in, want string
		deliver  bool
	}{
		{"hello", "hello", true},
		{"  NO_REPLY \n", "", false},
		{"no_reply", "", false},
		{"NO_REPLYhello", "hello", true},
		{"😄 NO_REPLY", "😄", true},
		{"NO_REPLY: x", "NO_REPLY: x", true},
		{"say NO_REPLY_x", "say NO_REPLY_x", true},
		{"HEARTBEAT_OK", "", false},
		{"HEARTBEAT_OK all quiet", "all quiet", true},
		{"all quiet HEARTBEAT_OK", "all quiet", true},
		{"all quiet HEARTBEAT_OK!!.", "all quiet", true},
		{"all quiet HEARTBEAT_OK!!!!!", "all quiet HEARTBEAT_OK!!!!!", true},
		{"before HEARTBEAT_OK after", "before HEARTBEAT_OK after", true},
		{"xHEARTBEAT_OK", "xHEARTBEAT_OK", true},
		{"", "", false},
	}
	for _, c := range cases {
		got, deliver := NormalizeReply(c.in)
		assert.Equal(t, c.want, got, c.in)
		assert.Equal(t, c.deliver, deliver, c.in)
	}
}
