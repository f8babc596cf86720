package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/offsetslog"
)

var _ audit.CommitHistoryReader = (*Source)(nil)

// CommitHistory reads the group's partition of __consumer_offsets (Kafka's
// hash of the group id over the topic's partition count) with the plain
// read_uncommitted fetches Records makes: no group id, nothing committed,
// markers and pending transactions included, up to the partition's high
// watermark; offsetslog replays it. It needs READ on TOPIC
// __consumer_offsets (which implies the DESCRIBE that listing its offsets
// needs); without it the error wraps audit.ErrUnreadable and names that
// ACL. A cluster without the topic (no group ever committed there, or a
// broker that keeps offsets elsewhere, as kfake does) gives an error
// wrapping audit.ErrNotSupported.
func (s *Source) CommitHistory(ctx context.Context, group string) (audit.CommitHistory, error) {
	// Listed first, among every topic: a metadata request naming a topic
	// the cluster lacks leaves franz-go's client retrying it, and the next
	// request (the audit's own listing) waited out its timeout on kfake.
	lctx, cancel := s.reqCtx(ctx)
	all, err := retryDial(lctx, &s.refused, func() (kadm.TopicDetails, error) { return s.adm.ListTopicsWithInternal(lctx) })
	cancel()
	if err == nil && !all.Has(audit.ConsumerOffsetsTopic) {
		// a topic this client may not DESCRIBE is left out of the listing as
		// one that does not exist is (a broker keeping offsets elsewhere, as
		// kfake does, or one no group committed on yet)
		return audit.CommitHistory{}, fmt.Errorf("read the commit history of group %s: the cluster lists no %s topic: not authorized (kaudit needs READ on TOPIC %s, an ACL; READ implies the DESCRIBE the listing needs), or it does not exist: %w",
			group, audit.ConsumerOffsetsTopic, audit.ConsumerOffsetsTopic, audit.ErrUnreadable)
	}
	h, err := offsetslog.Read(ctx, s, group)
	switch {
	case err == nil:
		return h, nil
	case errors.Is(err, kerr.TopicAuthorizationFailed):
		return h, fmt.Errorf("read the commit history of group %s: not authorized: kaudit needs READ on TOPIC %s (an ACL; READ implies the DESCRIBE it also needs) to fetch the group's partition of it: %w: %w",
			group, audit.ConsumerOffsetsTopic, err, audit.ErrUnreadable)
	case errors.Is(err, audit.ErrTopicNotFound):
		return h, fmt.Errorf("read the commit history of group %s: the cluster has no %s topic (no group has committed offsets on it, or the broker keeps them elsewhere): %w",
			group, audit.ConsumerOffsetsTopic, audit.ErrNotSupported)
	}
	return h, err
}
