package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestDialErrors: a refused connection, or a broker the client no longer
// knows, is a gone broker however it is
// wrapped or flattened; an answer from a broker is not.
func TestDialErrors(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, c := range []struct {
		err  error
		dial bool
	}{
		{nil, false},
		{refused, true},
		{fmt.Errorf("fetch from broker 3: unable to dial: %w", refused), true},
		{errors.New("request ListOffsets has 1 separate shard errors, first: unable to dial: dial tcp 127.0.0.1:19392: connect: connection refused"), true},
		{fmt.Errorf("fetch from broker 3: %w", errors.New("unknown broker")), true}, // fenced, dropped from the metadata
		{kerr.NotLeaderForPartition, false},
		{context.DeadlineExceeded, false},
		{&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, false},
	} {
		if got := brokerGone(c.err); got != c.dial {
			t.Errorf("brokerGone(%v) = %v, want %v", c.err, got, c.dial)
		}
	}
}

// TestDialSpell: refusals are retried for dialRetryFor from the first of
// a spell, whatever the request; a quiet time starts a new spell.
func TestDialSpell(t *testing.T) {
	var d dialSpell
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		at    time.Duration
		retry bool
	}{
		{0, true},
		{dialRetryFor / 2, true},
		{dialRetryFor - time.Millisecond, true},
		{dialRetryFor, false},      // the spell lasted too long
		{dialRetryFor + 1, false},  // for every request
		{4*dialRetryFor + 1, true}, // after a quiet time, a new spell
	} {
		if got := d.retryable(t0.Add(c.at)); got != c.retry {
			t.Errorf("at %s: retryable %v, want %v", c.at, got, c.retry)
		}
	}
}

// TestRetryDial: a request refused twice then answered is answered; one
// that fails otherwise is not tried again.
func TestRetryDial(t *testing.T) {
	old := dialRetry
	dialRetry = time.Millisecond
	t.Cleanup(func() { dialRetry = old })
	var d dialSpell
	calls := 0
	v, err := retryDial(t.Context(), &d, func() (int, error) {
		calls++
		if calls < 3 {
			return 0, fmt.Errorf("unable to dial: %w", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED})
		}
		return 7, nil
	})
	if v != 7 || err != nil || calls != 3 {
		t.Errorf("got %d, %v after %d calls, want 7 after 3", v, err, calls)
	}
	calls = 0
	_, err = retryDial(t.Context(), &d, func() (int, error) { calls++; return 0, kerr.NotLeaderForPartition })
	if !errors.Is(err, kerr.NotLeaderForPartition) || calls != 1 {
		t.Errorf("got %v after %d calls, want NOT_LEADER after 1", err, calls)
	}
}
