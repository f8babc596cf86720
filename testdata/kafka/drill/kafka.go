package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// createTopics creates the app's source and output topics, replicated over every broker.
func (d *drill) createTopics(ctx context.Context, partitions int32) error {
	adm, closeFn, err := d.admin()
	if err != nil {
		return err
	}
	defer closeFn()
	cfg := map[string]*string{}
	if d.brokers == 3 {
		two := "2"
		cfg["min.insync.replicas"] = &two
	}
	topics := append(append([]string(nil), sourceTopics...), topicOutput)
	res, err := adm.CreateTopics(ctx, partitions, int16(d.brokers), cfg, topics...)
	if err != nil {
		return fmt.Errorf("create topics: %w", err)
	}
	if err := res.Error(); err != nil {
		return fmt.Errorf("create topics: %w", err)
	}
	return nil
}

// tpOffsets maps topic -> partition -> offset.
type tpOffsets map[string]map[int32]int64

func (o tpOffsets) get(t string, p int32) (int64, bool) {
	v, ok := o[t][p]
	return v, ok
}

func (o tpOffsets) set(t string, p int32, v int64) {
	if o[t] == nil {
		o[t] = map[int32]int64{}
	}
	o[t][p] = v
}

// state is one observation of the app's topics: the group's committed offsets, log start, LSO
// and high watermark of every partition.
type state struct {
	committed, start, lso, hw tpOffsets
	internal                  []string // the app's repartition and changelog topics
}

func (s state) repartitions() []string { return filterSuffix(s.internal, "-repartition") }
func (s state) changelogs() []string   { return filterSuffix(s.internal, "-changelog") }

// hops are the internal topics the app writes and reads back: its repartition topics and a
// foreign-key join's subscription topics (…-SUBSCRIPTION-REGISTRATION-…-topic, …-RESPONSE-…-topic).
func (s state) hops() []string {
	return append(s.repartitions(), filterSuffix(s.internal, "-topic")...)
}

func filterSuffix(l []string, suf string) []string {
	var out []string
	for _, t := range l {
		if strings.HasSuffix(t, suf) {
			out = append(out, t)
		}
	}
	return out
}

// observe reads the offsets of every topic of the app.
func (d *drill) observe(ctx context.Context) (state, error) {
	return d.observeApp(ctx, appID, append(append([]string(nil), sourceTopics...), topicOutput))
}

// observeApp reads the offsets of topics and of app's internal topics, and app's committed
// offsets (app is the application id: the group and the internal topics' prefix).
func (d *drill) observeApp(ctx context.Context, appID string, topics []string) (state, error) {
	adm, closeFn, err := d.admin()
	if err != nil {
		return state{}, err
	}
	defer closeFn()
	c, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	s := state{committed: tpOffsets{}, start: tpOffsets{}, lso: tpOffsets{}, hw: tpOffsets{}}
	td, err := adm.ListTopics(c)
	if err != nil {
		return s, fmt.Errorf("list topics: %w", err)
	}
	for _, t := range td.Names() {
		if strings.HasPrefix(t, appID+"-") {
			s.internal = append(s.internal, t)
		}
	}
	sort.Strings(s.internal)
	all := append(append([]string(nil), topics...), s.internal...)
	fill := func(dst tpOffsets, l kadm.ListedOffsets, err error, what string) error {
		if err != nil {
			return fmt.Errorf("list %s offsets: %w", what, err)
		}
		if err := l.Error(); err != nil {
			return fmt.Errorf("list %s offsets: %w", what, err)
		}
		l.Each(func(o kadm.ListedOffset) { dst.set(o.Topic, o.Partition, o.Offset) })
		return nil
	}
	l, err := adm.ListStartOffsets(c, all...)
	if err := fill(s.start, l, err, "start"); err != nil {
		return s, err
	}
	l, err = adm.ListEndOffsets(c, all...)
	if err := fill(s.hw, l, err, "end"); err != nil {
		return s, err
	}
	l, err = adm.ListCommittedOffsets(c, all...)
	if err := fill(s.lso, l, err, "last stable"); err != nil {
		return s, err
	}
	fo, err := adm.FetchOffsets(c, appID)
	if err != nil {
		return s, fmt.Errorf("fetch offsets of %s: %w", appID, err)
	}
	fo.Each(func(r kadm.OffsetResponse) {
		if r.Err == nil && r.At >= 0 {
			s.committed.set(r.Topic, r.Partition, r.At)
		}
	})
	return s, nil
}

// caughtUp says why s is not yet a finished run, or "" when it is: every source partition's
// committed offset at its high watermark, every repartition partition's at its high watermark
// or one below (the last offset is then a marker), and no open transaction anywhere.
func (s state) caughtUp() string {
	for _, t := range sourceTopics {
		for p, hw := range s.hw[t] {
			c, ok := s.committed.get(t, p)
			if hw > 0 && (!ok || c < hw) {
				return fmt.Sprintf("%s/%d committed %d < hw %d", t, p, c, hw)
			}
		}
	}
	if len(s.repartitions()) != 3 || len(s.changelogs()) != 3 {
		return fmt.Sprintf("internal topics not all there yet: %v", s.internal)
	}
	for _, t := range s.repartitions() {
		for p, hw := range s.hw[t] {
			c, ok := s.committed.get(t, p)
			if hw > 0 && (!ok || c < hw-1) {
				return fmt.Sprintf("%s/%d committed %d < hw %d - 1", t, p, c, hw)
			}
		}
	}
	if open := s.openNote(); open != "" {
		return open
	}
	return ""
}

func (s state) sameEnds(o state) bool {
	for t, ps := range s.hw {
		for p, v := range ps {
			if w, _ := o.hw.get(t, p); w != v {
				return false
			}
			if a, b := s.committed[t][p], o.committed[t][p]; a != b {
				return false
			}
		}
	}
	return true
}

// waitCaughtUp polls until the app has processed and committed everything and the state held
// still for 3 s.
func (d *drill) waitCaughtUp(ctx context.Context, a *appRun, timeout time.Duration) (state, error) {
	return pollCaughtUp(ctx, timeout, "the app", a, d.observe, state.caughtUp)
}

// pollCaughtUp polls observe every 500 ms until caughtUp says nothing is left ("") and the
// partitions' ends and committed offsets held still for 3 s; it fails when the app a (nil: not
// watched) exits or the timeout passes, naming what was left.
func pollCaughtUp(ctx context.Context, timeout time.Duration, name string, a *appRun,
	observe func(context.Context) (state, error), caughtUp func(state) string) (state, error) {
	deadline := time.Now().Add(timeout)
	var prev state
	var stableSince time.Time
	why := "not observed yet"
	for time.Now().Before(deadline) {
		if a != nil && !a.alive() {
			return prev, fmt.Errorf("%s exited while catching up (%v); see %s", name, a.err, a.log)
		}
		s, err := observe(ctx)
		if err == nil {
			why = caughtUp(s)
			if why == "" {
				if prev.hw != nil && s.sameEnds(prev) {
					if time.Since(stableSince) >= 3*time.Second {
						return s, nil
					}
				} else {
					stableSince = time.Now()
				}
			}
			prev = s
		} else {
			why = err.Error()
		}
		select {
		case <-ctx.Done():
			return prev, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return prev, fmt.Errorf("%s did not catch up within %s: %s", name, timeout, why)
}

// readPartition reads topic/p from offset from to the partition's end (HW for read_uncommitted,
// LSO for read_committed), control records included.
func (d *drill) readPartition(ctx context.Context, topic string, p int32, from, end int64, committed bool) ([]*kgo.Record, error) {
	if from >= end {
		return nil, nil
	}
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl, err := d.client(
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(from)}}),
		kgo.FetchIsolationLevel(iso), kgo.KeepControlRecords(),
	)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []*kgo.Record
	c, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		fs := cl.PollFetches(c)
		if err := c.Err(); err != nil {
			return out, fmt.Errorf("read %s/%d [%d, %d): %w", topic, p, from, end, err)
		}
		var ferr error
		fs.EachError(func(t string, pp int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				ferr = fmt.Errorf("read %s/%d: %w", t, pp, err)
			}
		})
		if ferr != nil {
			return out, ferr
		}
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < end {
				out = append(out, r)
			}
			if r.Offset >= end-1 {
				done = true
			}
		})
		if done {
			return out, nil
		}
	}
}

// isAbortMarker reports whether r is an ABORT control record (key: int16 version, int16 type 0).
func isAbortMarker(r *kgo.Record) bool {
	return r.Attrs.IsControl() && len(r.Key) >= 4 && r.Key[2] == 0 && r.Key[3] == 0
}

// countAborts counts ABORT markers on topics, read raw.
func (d *drill) countAborts(ctx context.Context, s state, topics []string) (map[string]int, error) {
	out := map[string]int{}
	for _, t := range topics {
		for p, hw := range s.hw[t] {
			start, _ := s.start.get(t, p)
			recs, err := d.readPartition(ctx, t, p, start, hw, false)
			if err != nil {
				return nil, err
			}
			for _, r := range recs {
				if isAbortMarker(r) {
					out[t]++
				}
			}
		}
	}
	return out, nil
}

// lastValues reads topic read_committed and returns the last decoded value per key (a
// tombstone removes the key).
func (d *drill) lastValues(ctx context.Context, s state, topic string) (map[string]map[string]any, error) {
	out := map[string]map[string]any{}
	for p, lso := range s.lso[topic] {
		start, _ := s.start.get(topic, p)
		recs, err := d.readPartition(ctx, topic, p, start, lso, true)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			if r.Attrs.IsControl() {
				continue
			}
			if r.Value == nil {
				delete(out, string(r.Key))
				continue
			}
			v, err := d.schemas.decode(d.regURL, r.Value)
			if err != nil {
				return nil, fmt.Errorf("%s/%d@%d: %w", topic, p, r.Offset, err)
			}
			out[string(r.Key)] = v
		}
	}
	return out, nil
}
