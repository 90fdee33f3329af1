package discord

import (
	"fmt"
	"reflect"
	"sync/atomic"
	"unsafe"

	"github.com/bwmarrin/discordgo"
)

// A discordgo Session serves its connections one after another, and the
// goroutines of a connection that ended can still act on it: when the
// heartbeat ticks while the reader's Close holds the session's lock (it
// waits a second there for Discord's close frame), the heartbeat goroutine
// then fails its write to the closed socket and calls Close again, which
// by then closes the next connection. After an op 9 that ends the new
// session before its READY and costs another IDENTIFY; otherwise another
// RESUME. So each connection that RESUMEs gets a Session of its own: a
// late Close reaches only the Session whose connection ended, whose
// Disconnect the handler ignores.
//
// What a RESUME needs, the session ID and the last sequence number (and
// the gateway URL, which spares a GET /gateway), discordgo keeps in
// unexported fields; carryResume copies them. resumeFields checks at
// start that this discordgo has them, so an upgrade that renames one
// fails NewGateway (and its test), not a reconnect.

// resumeFields are the Session fields carryResume copies, with their types.
var resumeFields = map[string]reflect.Type{
	"sessionID": reflect.TypeFor[string](),
	"gateway":   reflect.TypeFor[string](),
	"sequence":  reflect.TypeFor[*int64](),
}

// checkResumeFields reports a discordgo Session without the fields a
// RESUME on a new Session needs.
func checkResumeFields() error {
	t := reflect.TypeFor[discordgo.Session]()
	for name, want := range resumeFields {
		f, ok := t.FieldByName(name)
		if !ok || f.Type != want {
			return fmt.Errorf("discord gateway: this discordgo's Session has no field %s of type %s, which resuming on a new connection copies; pin the discordgo version go.mod names", name, want)
		}
	}
	return nil
}

// carryResume gives to, a Session that never connected, what from's
// RESUME would send. It reads from under its lock, so a late Close of
// from's ended connection finishes first.
func carryResume(from, to *discordgo.Session) {
	from.RLock()
	defer from.RUnlock()
	src, dst := reflect.ValueOf(from).Elem(), reflect.ValueOf(to).Elem()
	for _, name := range []string{"sessionID", "gateway"} {
		writable(dst.FieldByName(name)).SetString(src.FieldByName(name).String())
	}
	seq := (*int64)(src.FieldByName("sequence").UnsafePointer())
	atomic.StoreInt64((*int64)(dst.FieldByName("sequence").UnsafePointer()), atomic.LoadInt64(seq))
}

// writable is v, an addressable unexported field, as a settable value.
func writable(v reflect.Value) reflect.Value {
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
}
