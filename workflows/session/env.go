package session

import (
	"time"

	"go.temporal.io/sdk/log"

	"github.com/replyflow/replyflow/pipeline"
)

// Env is what a part reads besides its own state: the moment of the
// event, the session's key and settings, and a logger. The loop builds it
// for every event from workflow.Now and the settings the session loaded;
// a test builds it by hand.
type Env struct {
	Now time.Time
	Key pipeline.SessionKey
	// Chain is the first run's ID of the session's chain of runs: turn
	// IDs (and the idempotency keys made of them) begin with it, so a
	// session that completed and starts again never reuses one.
	Chain    string
	Settings pipeline.Settings
	Log      log.Logger
}

// IsOwner reports whether the sender of in is one of the session's
// owners: listed in the settings, or verified as an owner by its adapter.
func (e Env) IsOwner(in pipeline.Inbound) bool {
	return pipeline.Allowed(in.Channel+":"+in.SenderID, e.Settings.Owners) || in.SenderIsOwner
}

// logger is the Env's logger, or one that drops everything for an Env
// built without one.
func (e Env) logger() log.Logger {
	if e.Log == nil {
		return noLog{}
	}
	return e.Log
}

type noLog struct{}

func (noLog) Debug(string, ...interface{}) {}
func (noLog) Info(string, ...interface{})  {}
func (noLog) Warn(string, ...interface{})  {}
func (noLog) Error(string, ...interface{}) {}
