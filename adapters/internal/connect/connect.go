// Package connect is the retry loop the platforms' gateway sides use to
// reach their platform at start: one platform being down must hold up no
// other, and must show on /healthz while it is retried.
package connect

import (
	"context"
	"time"
)

// Waits between attempts: doubling from First to Last, then Last until
// the platform answers (or a Retry-After longer than that).
const (
	First = time.Second
	Last  = 30 * time.Second
)

// Until runs attempt until it succeeds (nil), ctx is done (ctx.Err()), or
// classify says a failure is permanent (that error). Before each wait it
// calls failed with the attempt's number, when the next starts, and the
// error, for the log and the health reporter.
func Until(ctx context.Context, attempt func() error, classify func(error) (permanent bool, retryAfter time.Duration), failed func(n int, next time.Time, err error)) error {
	wait := First
	for n := 1; ; n++ {
		err := attempt()
		if err == nil || ctx.Err() != nil {
			return ctx.Err()
		}
		permanent, after := classify(err)
		if permanent {
			return err
		}
		wait = max(wait, after)
		next := time.Now().Add(wait)
		failed(n, next, err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, Last)
	}
}
