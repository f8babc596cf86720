package kafka

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaudit/kaudit/audit"
)

var (
	_ audit.Source          = (*Source)(nil)
	_ audit.CommittedReader = (*Source)(nil)
	_ audit.IndexedReader   = (*Source)(nil)
)

// ErrConfig marks an Open error caused by the client configuration (the
// properties or the bootstrap list) rather than by the cluster.
var ErrConfig = errors.New("invalid client configuration")

// DefaultTimeout bounds one request, and reaching the cluster in Open, when
// Config.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// Config says how to reach a cluster.
type Config struct {
	// Bootstrap lists the seed brokers, host:port each.
	Bootstrap []string
	// Properties are Kafka's Java client properties (security.protocol,
	// sasl.*, ssl.*). Properties kaudit does not use are ignored, and named
	// to Warn.
	Properties map[string]string
	// Warn, when set, is told the names of the properties kaudit does not
	// use (never their values).
	Warn func(string)
	// Timeout bounds one request and the reachability check of Open;
	// zero means DefaultTimeout.
	Timeout time.Duration
	// ClientID is sent to the brokers; empty means "kaudit".
	ClientID string
	// StableTimeout bounds how long GroupOffsets waits for a pending
	// transactional offset commit (UNSTABLE_OFFSET_COMMIT) to end; zero
	// means DefaultStableTimeout.
	StableTimeout time.Duration
}

// DefaultStableTimeout is how long GroupOffsets waits, by default, for the
// group's offsets to become stable: past a transaction's timeout (Streams
// uses 10 s under exactly-once), a pending commit that still holds them
// is a hanging transaction, not one about to end.
const DefaultStableTimeout = 30 * time.Second

var (
	_ audit.Source          = (*Source)(nil)
	_ audit.CommittedReader = (*Source)(nil)
	_ audit.IndexedReader   = (*Source)(nil)
	_ audit.SampleReader    = (*Source)(nil)
	_ audit.Fingerprinter   = (*Source)(nil)
)

// Source is a read-only live cluster: it implements audit.Source,
// audit.CommittedReader, audit.IndexedReader and audit.SampleReader. It is safe for concurrent use.
type Source struct {
	cl        *kgo.Client
	adm       *kadm.Client
	bootstrap []string
	timeout   time.Duration
	stable    time.Duration
	refused   dialSpell // brokers refusing connections (dial.go)
}

// The configs TopicInfo carries.
var auditedConfigs = []string{
	"cleanup.policy", "retention.ms", "retention.bytes", "min.insync.replicas",
	"unclean.leader.election.enable", "segment.ms", "segment.bytes",
	"min.compaction.lag.ms", "delete.retention.ms", "message.timestamp.type",
}

// Open builds a read-only client for cfg and checks within cfg.Timeout that
// the cluster answers a metadata request (with the configured TLS and SASL).
// The error names the bootstrap servers and never a secret.
func Open(ctx context.Context, cfg Config) (*Source, error) {
	if len(cfg.Bootstrap) == 0 {
		return nil, fmt.Errorf("open cluster: %w: no bootstrap servers", ErrConfig)
	}
	servers := strings.Join(cfg.Bootstrap, ",")
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	id := cfg.ClientID
	if id == "" {
		id = "kaudit"
	}
	if u := UnusedProperties(cfg.Properties); len(u) > 0 && cfg.Warn != nil {
		cfg.Warn("client properties kaudit does not use, ignored: " + strings.Join(u, ", "))
	}
	sec, err := securityOpts(cfg.Properties)
	if err != nil {
		return nil, fmt.Errorf("configure client for %s: %w: %w", servers, ErrConfig, err)
	}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(cfg.Bootstrap...),
		kgo.ClientID(id),
		kgo.DialTimeout(timeout),
		kgo.RetryTimeout(timeout),
		kgo.RequestTimeoutOverhead(timeout),
		kgo.MetadataMinAge(metadataMinAge),
		kgo.DisableClientMetrics(),
		// Read-only: no group, no transactional id, no produce topic,
		// no topic auto-creation (kgo's default is off and stays off).
	}, sec...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("configure client for %s: %w: %w", servers, ErrConfig, err)
	}
	stable := cfg.StableTimeout
	if stable <= 0 {
		stable = DefaultStableTimeout
	}
	s := &Source{cl: cl, adm: kadm.NewClient(cl), bootstrap: slices.Clone(cfg.Bootstrap), timeout: timeout, stable: stable}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := s.adm.BrokerMetadata(pctx); err != nil {
		cl.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if mech := saslName(cfg.Properties); mech != "" && saslRefused(err) {
			return nil, fmt.Errorf("log in to %s with SASL %s: the broker refused the login or closed the connection during it (a wrong user or password, or a mechanism it does not enable): %w", servers, mech, err)
		}
		return nil, fmt.Errorf("reach bootstrap servers %s within %s: %w", servers, timeout, err)
	}
	return s, nil
}

// saslName is the SASL mechanism the properties configure, or "".
func saslName(props map[string]string) string {
	if !strings.HasPrefix(strings.ToUpper(strings.TrimSpace(props["security.protocol"])), "SASL_") {
		return ""
	}
	if m, err := saslMechanism(props); err == nil {
		return m.Name()
	}
	return "login"
}

// saslRefused reports whether err is what a broker's refusal of a SASL
// login looks like: an authentication error, or a connection closed
// during the login (Kafka closes it after a failed authentication; a
// client that cannot read the error only sees EOF).
func saslRefused(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, kerr.SaslAuthenticationFailed) ||
		errors.Is(err, kerr.IllegalSaslState) || errors.Is(err, kerr.UnsupportedSaslMechanism)
}

// Close releases the client's connections.
func (s *Source) Close() { s.cl.Close() }

// Describe says "live" and the bootstrap servers.
func (s *Source) Describe() string { return "live " + strings.Join(s.bootstrap, ",") }

// ClusterID returns the cluster's id from a metadata request (snapshot
// manifests record it).
func (s *Source) ClusterID(ctx context.Context) (string, error) {
	ctx, cancel := s.reqCtx(ctx)
	defer cancel()
	m, err := s.adm.BrokerMetadata(ctx)
	if err != nil {
		return "", fmt.Errorf("read cluster id: %w", err)
	}
	return m.Cluster, nil
}

// Fingerprint names the cluster and the layout of topics: its id and
// their partition counts (audit.Fingerprinter). Their offsets are left
// out: they move while the shards of one run start, one after the other.
func (s *Source) Fingerprint(ctx context.Context, topics []string) (string, error) {
	id, err := s.ClusterID(ctx)
	if err != nil {
		return "", fmt.Errorf("fingerprint the cluster: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "cluster %q\n", id)
	if err := audit.HashTopics(ctx, h, s, topics, false); err != nil {
		return "", err
	}
	return fmt.Sprintf("cluster %s sha256:%x", id, h.Sum(nil)), nil
}

// reqCtx bounds one request.
func (s *Source) reqCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// authErr says which resource and operation an authorization error is
// about; other errors pass through.
func authErr(err error, resource, op string) error {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return err
	}
	switch ke {
	case kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed, kerr.ClusterAuthorizationFailed,
		kerr.TransactionalIDAuthorizationFailed:
		return fmt.Errorf("not authorized: %s needs the %s operation (ACL): %w", resource, op, err)
	}
	return err
}

// Metadata retries: a topic-level error that may pass (LEADER_NOT_AVAILABLE
// while a broker is down) or an answer that leaves the topic out is asked
// again metaTries times, metaBackoff apart (past the client's metadata
// cache age), then reported as unreadable evidence, never as a missing
// topic.
var (
	metaTries      = 3
	metaBackoff    = 1100 * time.Millisecond
	metadataMinAge = time.Second
)

// unreadable wraps err as evidence that could not be read.
func unreadable(err error) error {
	if errors.Is(err, audit.ErrUnreadable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %w", err, audit.ErrUnreadable)
}

// topicMeta returns the topic's metadata, or an error wrapping
// audit.ErrTopicNotFound (the broker says it does not exist) or
// audit.ErrUnreadable (not authorized, or the metadata kept failing).
func (s *Source) topicMeta(ctx context.Context, topic string) (kadm.TopicDetail, error) {
	for try := 1; ; try++ {
		m, err := retryDial(ctx, &s.refused, func() (kadm.Metadata, error) {
			rctx, cancel := s.reqCtx(ctx)
			defer cancel()
			return s.adm.Metadata(rctx, topic)
		})
		if err != nil {
			if ctx.Err() != nil {
				return kadm.TopicDetail{}, ctx.Err()
			}
			return kadm.TopicDetail{}, fmt.Errorf("describe topic %q: %w", topic, unreadable(authErr(err, "topic "+topic, "DESCRIBE")))
		}
		td, ok := m.Topics[topic]
		switch {
		case ok && (errors.Is(td.Err, kerr.UnknownTopicOrPartition) || errors.Is(td.Err, kerr.UnknownTopicID)):
			return kadm.TopicDetail{}, fmt.Errorf("describe topic %q: %w", topic, audit.ErrTopicNotFound)
		case ok && td.Err == nil:
			return td, nil
		}
		err = td.Err
		if !ok {
			err = errors.New("the broker's answer leaves it out")
		}
		var ke *kerr.Error
		if try >= metaTries || (errors.As(err, &ke) && !ke.Retriable) {
			return kadm.TopicDetail{}, fmt.Errorf("describe topic %q (%d tries): %w", topic, try, unreadable(authErr(err, "topic "+topic, "DESCRIBE")))
		}
		select {
		case <-ctx.Done():
			return kadm.TopicDetail{}, ctx.Err()
		case <-time.After(metaBackoff):
		}
	}
}

// partitionMeta returns the partition's metadata, or an error wrapping
// audit.ErrTopicNotFound or audit.ErrPartitionNotFound.
func (s *Source) partitionMeta(ctx context.Context, tp audit.TopicPartition) (kadm.TopicDetail, kadm.PartitionDetail, error) {
	td, err := s.topicMeta(ctx, tp.Topic)
	if err != nil {
		return td, kadm.PartitionDetail{}, err
	}
	pd, ok := td.Partitions[tp.Partition]
	if !ok {
		return td, pd, fmt.Errorf("describe %s: %w (topic %q has %d)", tp, audit.ErrPartitionNotFound, tp.Topic, len(td.Partitions))
	}
	return td, pd, nil
}

// Partitions returns the topic's partition count.
func (s *Source) Partitions(ctx context.Context, topic string) (int32, error) {
	td, err := s.topicMeta(ctx, topic)
	if err != nil {
		return 0, err
	}
	return int32(len(td.Partitions)), nil
}

// Offsets returns the partition's log-start offset, last stable offset and
// high watermark.
func (s *Source) Offsets(ctx context.Context, tp audit.TopicPartition) (audit.PartitionOffsets, error) {
	if _, _, err := s.partitionMeta(ctx, tp); err != nil {
		return audit.PartitionOffsets{}, err
	}
	var po audit.PartitionOffsets
	for _, l := range []struct {
		name string
		fn   func(context.Context, ...string) (kadm.ListedOffsets, error)
		dst  *int64
	}{
		{"log-start offset", s.adm.ListStartOffsets, &po.LogStart},
		{"last stable offset", s.adm.ListCommittedOffsets, &po.LSO},
		{"high watermark", s.adm.ListEndOffsets, &po.HW},
	} {
		lo, err := retryDial(ctx, &s.refused, func() (kadm.ListedOffsets, error) {
			rctx, cancel := s.reqCtx(ctx) // each try its own deadline
			defer cancel()
			return l.fn(rctx, tp.Topic)
		})
		if err == nil {
			o, ok := lo.Lookup(tp.Topic, tp.Partition)
			switch {
			case !ok:
				err = audit.ErrPartitionNotFound
			case o.Err != nil:
				err = o.Err
			}
			*l.dst = o.Offset
		}
		if err != nil {
			if !errors.Is(err, audit.ErrPartitionNotFound) {
				err = unreadable(authErr(err, "topic "+tp.Topic, "DESCRIBE"))
			}
			return audit.PartitionOffsets{}, fmt.Errorf("list %s of %s: %w", l.name, tp, err)
		}
	}
	return po, nil
}

// Topics lists every non-internal topic with its partition count,
// replication factor and the configs an audit looks at.
func (s *Source) Topics(ctx context.Context) ([]audit.TopicInfo, error) {
	ctx, cancel := s.reqCtx(ctx)
	defer cancel()
	var tds kadm.TopicDetails
	for try := 1; ; try++ {
		var err error
		if tds, err = retryDial(ctx, &s.refused, func() (kadm.TopicDetails, error) { return s.adm.ListTopics(ctx) }); err != nil {
			return nil, fmt.Errorf("list topics: %w", authErr(err, "the cluster", "DESCRIBE"))
		}
		failing := false
		for _, td := range tds {
			var ke *kerr.Error
			failing = failing || (errors.As(td.Err, &ke) && ke.Retriable)
		}
		if !failing || try >= metaTries {
			break
		}
		// a topic-level error that may pass: ask again
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(metaBackoff):
		}
	}
	all := tds.Names()
	slices.Sort(all)
	infos := make([]audit.TopicInfo, 0, len(all))
	byName := map[string]int{}
	var names []string
	for _, n := range all {
		td := tds[n]
		if errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			continue // deleted while listing
		}
		var ke *kerr.Error
		if errors.As(td.Err, &ke) && ke.Retriable {
			// still failing: left out, as an ACL would leave it out;
			// Partitions says it is unreadable, not that it is missing
			continue
		}
		if td.Err != nil {
			return nil, fmt.Errorf("list topics: topic %q: %w", n, authErr(td.Err, "topic "+n, "DESCRIBE"))
		}
		ti := audit.TopicInfo{Name: n, Partitions: int32(len(td.Partitions)), Configs: map[string]string{}}
		for _, p := range td.Partitions {
			ti.ReplicationFactor = max(ti.ReplicationFactor, int16(len(p.Replicas)))
		}
		byName[n] = len(infos)
		infos = append(infos, ti)
		names = append(names, n)
	}
	if len(names) == 0 {
		return infos, nil
	}
	rcs, err := retryDial(ctx, &s.refused, func() (kadm.ResourceConfigs, error) { return s.adm.DescribeTopicConfigs(ctx, names...) })
	if err != nil {
		return nil, fmt.Errorf("describe topic configs: %w", authErr(err, "topics", "DESCRIBE_CONFIGS"))
	}
	for _, rc := range rcs {
		i, ok := byName[rc.Name]
		if !ok {
			continue
		}
		if rc.Err != nil {
			if errors.Is(rc.Err, kerr.UnknownTopicOrPartition) {
				continue // deleted since it was listed
			}
			return nil, fmt.Errorf("describe configs of topic %q: %w", rc.Name, authErr(rc.Err, "topic "+rc.Name, "DESCRIBE_CONFIGS"))
		}
		for _, c := range rc.Configs {
			if c.Value != nil && slices.Contains(auditedConfigs, c.Key) {
				infos[i].Configs[c.Key] = *c.Value
			}
		}
	}
	return infos, nil
}

// stableTries is how often GroupOffsets asks again while a transaction
// holds the group's offsets unstable, within the source's StableTimeout.
var stableTries = 5

// GroupOffsets returns the group's committed offsets read with
// require_stable, its state and member count. While a transactional offset
// commit is pending the broker answers UNSTABLE_OFFSET_COMMIT (and the
// client retries it); after a few tries or StableTimeout, whichever comes
// first, the error says a transaction is pending and wraps
// audit.ErrUnreadable: the cut could not be read.
func (s *Source) GroupOffsets(ctx context.Context, group string) (audit.GroupOffsets, error) {
	g := audit.GroupOffsets{Group: group, Offsets: map[audit.TopicPartition]int64{}, Metadata: map[audit.TopicPartition]string{}}
	var resps kadm.OffsetResponses
	start := time.Now()
	deadline := start.Add(s.stable)
	for try := 1; ; try++ {
		reqEnd := time.Now().Add(s.timeout)
		if deadline.Before(reqEnd) {
			reqEnd = deadline
		}
		rctx, cancel := context.WithDeadline(ctx, reqEnd)
		r, err := s.adm.FetchOffsets(kadm.RequireStable(rctx), group)
		cancel()
		if err == nil {
			err = r.Error()
		}
		if err == nil {
			resps = r
			break
		}
		if ctx.Err() != nil {
			return g, ctx.Err()
		}
		if brokerGone(err) && s.refused.retryable(time.Now()) {
			// the coordinator refuses connections (killed): another takes
			// the group once the controller fences it
			if !sleep(ctx, dialRetry) {
				return g, ctx.Err()
			}
			continue
		}
		unstable := errors.Is(err, kerr.UnstableOffsetCommit)
		if !unstable && errors.Is(err, context.DeadlineExceeded) && !time.Now().Before(deadline) {
			// the client was still retrying UNSTABLE_OFFSET_COMMIT
			unstable, err = true, fmt.Errorf("%w: %w", kerr.UnstableOffsetCommit, err)
		}
		if unstable {
			wait := time.Duration(try) * 200 * time.Millisecond
			if try < stableTries && time.Now().Add(wait).Before(deadline) {
				select {
				case <-ctx.Done():
					return g, ctx.Err()
				case <-time.After(wait):
				}
				continue
			}
			return g, fmt.Errorf("fetch offsets of group %q: a transaction is pending on its offsets (still unstable after %d tries in %s; retry later or look for a hanging transaction): %w: %w",
				group, try, time.Since(start).Round(time.Millisecond), err, audit.ErrUnreadable)
		}
		if errors.Is(err, kerr.GroupIDNotFound) {
			return g, fmt.Errorf("fetch offsets of group %q: %w", group, audit.ErrGroupNotFound)
		}
		return g, fmt.Errorf("fetch offsets of group %q: %w", group, authErr(err, "group "+group, "DESCRIBE"))
	}
	resps.Each(func(o kadm.OffsetResponse) {
		if o.At < 0 {
			return
		}
		tp := audit.TopicPartition{Topic: o.Topic, Partition: o.Partition}
		g.Offsets[tp] = o.At
		g.Metadata[tp] = o.Metadata
	})

	dgs, err := retryDial(ctx, &s.refused, func() (kadm.DescribedGroups, error) {
		rctx, cancel := s.reqCtx(ctx)
		defer cancel()
		return s.adm.DescribeGroups(rctx, group)
	})
	if err != nil {
		return g, fmt.Errorf("describe group %q: %w", group, authErr(err, "group "+group, "DESCRIBE"))
	}
	dg, ok := dgs[group]
	switch {
	case ok && dg.Err != nil && !errors.Is(dg.Err, kerr.GroupIDNotFound):
		return g, fmt.Errorf("describe group %q: %w", group, authErr(dg.Err, "group "+group, "DESCRIBE"))
	case ok && dg.Err == nil:
		g.State, g.Members = dg.State, len(dg.Members)
	}
	if len(g.Offsets) == 0 && (g.State == "" || g.State == "Dead") {
		return g, fmt.Errorf("describe group %q: %w", group, audit.ErrGroupNotFound)
	}
	if g.State == "" {
		g.State = "Unknown" // offsets, but the group cannot be described
	}
	return g, nil
}

// Groups lists the cluster's consumer groups (ListGroups: those the
// principal may describe).
func (s *Source) Groups(ctx context.Context) ([]string, error) {
	lgs, err := retryDial(ctx, &s.refused, func() (kadm.ListedGroups, error) {
		rctx, cancel := s.reqCtx(ctx)
		defer cancel()
		return s.adm.ListGroups(rctx)
	})
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", authErr(err, "cluster", "DESCRIBE"))
	}
	return lgs.Groups(), nil
}

// Transactions lists the transactional ids starting with prefix (all when
// prefix is empty) with their coordinator state.
func (s *Source) Transactions(ctx context.Context, prefix string) ([]audit.Transaction, error) {
	ctx, cancel := s.reqCtx(ctx)
	defer cancel()
	lts, err := retryDial(ctx, &s.refused, func() (kadm.ListedTransactions, error) { return s.adm.ListTransactions(ctx, nil, nil) })
	if err != nil && len(lts) == 0 {
		return nil, fmt.Errorf("list transactions: %w", authErr(err, "transactional ids", "DESCRIBE"))
	}
	var ids []string
	for id := range lts {
		if strings.HasPrefix(id, prefix) {
			ids = append(ids, id)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("list transactions: %w", authErr(err, "transactional ids", "DESCRIBE"))
	}
	slices.Sort(ids)
	if len(ids) == 0 {
		return nil, nil
	}
	dts, err := retryDial(ctx, &s.refused, func() (kadm.DescribedTransactions, error) { return s.adm.DescribeTransactions(ctx, ids...) })
	if err != nil && len(dts) == 0 {
		return nil, fmt.Errorf("describe transactions: %w", authErr(err, "transactional ids", "DESCRIBE"))
	}
	out := make([]audit.Transaction, 0, len(ids))
	for _, id := range ids {
		dt, ok := dts[id]
		if !ok {
			continue // expired between list and describe
		}
		if dt.Err != nil {
			if errors.Is(dt.Err, kerr.TransactionalIDNotFound) {
				continue
			}
			return nil, fmt.Errorf("describe transaction %q: %w", id, authErr(dt.Err, "transactional id "+id, "DESCRIBE"))
		}
		t := audit.Transaction{
			TransactionalID: id, State: dt.State, ProducerID: dt.ProducerID, ProducerEpoch: dt.ProducerEpoch,
			TimeoutMillis: dt.TimeoutMillis, StartTimestamp: dt.StartTimestamp,
		}
		for topic, ps := range dt.Topics {
			for p := range ps {
				t.Partitions = append(t.Partitions, audit.TopicPartition{Topic: topic, Partition: p})
			}
		}
		slices.SortFunc(t.Partitions, audit.CompareTopicPartitions)
		out = append(out, t)
	}
	if err != nil {
		return out, fmt.Errorf("describe transactions: %w", err)
	}
	return out, nil
}

// Producers returns the producers the partition leaders remember for each
// partition (DescribeProducers), sorted by producer id.
func (s *Source) Producers(ctx context.Context, tps []audit.TopicPartition) (map[audit.TopicPartition][]audit.Producer, error) {
	out := map[audit.TopicPartition][]audit.Producer{}
	if len(tps) == 0 {
		return out, nil
	}
	set := kadm.TopicsSet{}
	for _, tp := range tps {
		set.Add(tp.Topic, tp.Partition)
	}
	ctx, cancel := s.reqCtx(ctx)
	defer cancel()
	dts, err := retryDial(ctx, &s.refused, func() (kadm.DescribedProducersTopics, error) { return s.adm.DescribeProducers(ctx, set) })
	if err != nil && len(dts) == 0 {
		for _, tp := range tps {
			if _, _, merr := s.partitionMeta(ctx, tp); merr != nil {
				return nil, fmt.Errorf("describe producers of %s: %w", tp, merr)
			}
		}
		return nil, fmt.Errorf("describe producers: %w", authErr(err, "topics", "READ"))
	}
	for _, tp := range tps {
		dp, ok := dts[tp.Topic].Partitions[tp.Partition]
		if !ok || dp.Err != nil {
			// Say which of topic and partition is missing.
			if _, _, merr := s.partitionMeta(ctx, tp); merr != nil {
				return nil, fmt.Errorf("describe producers of %s: %w", tp, merr)
			}
		}
		switch {
		case !ok && err != nil:
			return nil, fmt.Errorf("describe producers of %s: %w", tp, authErr(err, "topic "+tp.Topic, "READ"))
		case !ok:
			return nil, fmt.Errorf("describe producers of %s: %w", tp, audit.ErrPartitionNotFound)
		case errors.Is(dp.Err, kerr.UnknownTopicOrPartition):
			return nil, fmt.Errorf("describe producers of %s: %w", tp, audit.ErrPartitionNotFound)
		case dp.Err != nil:
			return nil, fmt.Errorf("describe producers of %s: %w", tp, authErr(dp.Err, "topic "+tp.Topic, "READ"))
		}
		ps := make([]audit.Producer, 0, len(dp.ActiveProducers))
		for _, p := range dp.ActiveProducers.Sorted() {
			ps = append(ps, audit.Producer{
				ProducerID: p.ProducerID, ProducerEpoch: p.ProducerEpoch, LastSequence: p.LastSequence,
				LastTimestamp: p.LastTimestamp, CoordinatorEpoch: p.CoordinatorEpoch,
				CurrentTxnStartOffset: p.CurrentTxnStartOffset,
			})
		}
		out[tp] = ps
	}
	return out, nil
}
