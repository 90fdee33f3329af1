package gateway

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// ErrDraining refuses an event while the gateway stops: the platform is
// told to deliver it again (a webhook's 503, an update left unconfirmed),
// and the gateway that stays or comes next takes it.
var ErrDraining = errors.New("the gateway is stopping; deliver it again")

// Drain is a Sink that refuses every event once Close was called, so a
// stopping gateway starts nothing new while the signals in flight finish.
type Drain struct {
	Next   adapters.Sink
	closed atomic.Bool
}

var _ adapters.Sink = (*Drain)(nil)

// Accept hands in on, or refuses it with ErrDraining once closed.
func (d *Drain) Accept(ctx context.Context, in pipeline.Inbound) error {
	if d.closed.Load() {
		return ErrDraining
	}
	return d.Next.Accept(ctx, in)
}

// Close makes every later Accept refuse.
func (d *Drain) Close() { d.closed.Store(true) }

// Ready is the readiness check of a draining gateway: unready once
// closed, so a load balancer sends nothing more.
func (d *Drain) Ready(context.Context) error {
	if d.closed.Load() {
		return ErrDraining
	}
	return nil
}
