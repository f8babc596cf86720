package kafka

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A broker killed -9 refuses connections, yet leads its partitions in the
// metadata until the controller fences it (broker.session.timeout.ms, 9 s
// by default); then another replica leads. A request that fails only by a
// refused dial is retried, dialRetry apart, until dialRetryFor after the
// first refusal of a spell of them: a broker down for good costs the audit
// that long once, not once per partition.
var (
	dialRetryFor = 30 * time.Second
	dialRetry    = 500 * time.Millisecond
)

// dialSpell is when the source's current spell of refused dials began.
type dialSpell struct {
	mu          sync.Mutex
	first, last time.Time
}

// retryable reports whether a request that failed with a refused dial
// now may be tried again: within dialRetryFor of the spell's first.
func (d *dialSpell) retryable(now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.last.IsZero() || now.Sub(d.last) > 2*dialRetryFor {
		d.first = now // a new spell
	}
	d.last = now
	return now.Sub(d.first) < dialRetryFor
}

// brokerGone reports whether err is a refused or failed connection to a
// broker, or a request to a broker the client no longer knows (the
// metadata dropped a fenced broker that a stale answer still names as a
// leader), and not an answer from one.
func brokerGone(err error) bool {
	if err == nil {
		return false
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	// kadm's sharded requests flatten their shards' errors into text, and
	// franz-go does not export its unknown broker error
	return errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(err.Error(), "unable to dial") || strings.Contains(err.Error(), "unknown broker")
}

// retryDial calls fn until it fails otherwise than by a refused dial, or
// the spell of refusals is too long.
func retryDial[T any](ctx context.Context, d *dialSpell, fn func() (T, error)) (T, error) {
	for {
		v, err := fn()
		if !brokerGone(err) || !d.retryable(time.Now()) || !sleep(ctx, dialRetry) {
			return v, err
		}
	}
}
