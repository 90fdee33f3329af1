package retiring

import (
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// runEnv is what every part of a session shares: the run's context and
// key, its settings, its logger, the running totals, and the mark that
// something visible changed. Parts read the settings (only a claim, which
// adds an owner, changes them), add to the counters, and set attrsDirty;
// only the main loop clears it, when it publishes.
type runEnv struct {
	ctx      workflow.Context
	key      pipeline.SessionKey
	settings pipeline.Settings
	log      log.Logger
	counters *Counters
	// v says which workflow changes this run took (versions.go).
	v versions
	// settingsLoaded is false until the settings local activity answered;
	// handlers registered before it wait for it where settings matter.
	settingsLoaded bool
	// attrsDirty is set when a search attribute changed; the main loop
	// publishes all changes of one step in one upsert.
	attrsDirty bool
}

// isOwner: the sender is one of the owners (configured or claimed) or,
// in a run that took changeSecurity, the adapter verified it as one.
func (e *runEnv) isOwner(in pipeline.Inbound) bool {
	return pipeline.Allowed(in.Channel+":"+in.SenderID, e.settings.Owners) || (e.v.security && in.SenderIsOwner)
}

// deliver sends one message to the platform, retried until the delivery
// deadline.
func (e *runEnv) deliver(ctx workflow.Context, d pipeline.Delivery) (string, error) {
	out, err := e.deliverDurably(ctx, d)
	return out.PlatformMessageID, err
}
