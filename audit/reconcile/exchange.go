package reconcile

// The shards of one run hand each other the inputs of re-keyed tables
// (Options.Exchange), so that together they read each source record once.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/kaudit/kaudit/audit"
)

// Exchange has the shards of one run hand each other the inputs of
// re-keyed tables through files under Dir (storage they all mount), in
// place of each shard reading every source partition: a shard reads only
// its own source partitions, does what the owner of a partition does with
// it (lag, gaps, null keys, what the steps filter or fail on), and writes
// each input to the shard that owns its key's repartition partition; it
// then takes its keys' inputs of every source partition from the files
// the shards wrote for it, in partition and offset order, as the shard
// that reads every partition would. Its report is that shard's.
//
// Every shard of the run must run at once: a shard waits at most Wait
// for another's inputs of a table (0: 30 minutes), then the run fails.
// Dir must be the run's own (kaudit diff --exchange puts it under the
// run's id): a file left from another run would be read as this one's.
type Exchange struct {
	Dir string
	// Index and Count say which shard this is: Options.Partitions are
	// the task partitions p < Tasks with p % Count == Index.
	Index, Count, Tasks int32
	Wait                time.Duration
}

// xmeta is what a shard that does not own a source partition learns of
// it from its owner: what reading every partition would have told it
// beyond its keys' inputs.
type xmeta struct {
	// Unreadable is the partition's unreadable finding's detail, "" when
	// it was read
	Unreadable string `json:"unreadable,omitempty"`
	LogStart   int64  `json:"log_start"`
	// Incomplete: the partition's history is not all readable (its log
	// start above the committed offset, or the committed offset above
	// the high watermark)
	Incomplete bool `json:"incomplete,omitempty"`
	// MultiElem and Unplaced are the table's flags as its owner left them
	// (tableState.multiElem, unplaced)
	MultiElem bool `json:"multi_elem,omitempty"`
	Unplaced  bool `json:"unplaced,omitempty"`
	// gone: the owner sent nothing (xgoneFile)
	gone bool
}

// exchanging says the shard takes the inputs of the table's source topic
// from the exchange: a re-keyed table (not windowed) of a run with one,
// whose source partitions each have an owner among the shards.
func (r *run) exchanging(ts *tableState, topic string) bool {
	x := r.opts.Exchange
	return x != nil && x.Count > 0 && r.opts.Partitions != nil && ts.t.Repartition != "" && !r.p.Keyless && ts.win == nil &&
		r.topics[topic].Partitions <= x.Tasks
}

// xdir is the folder of a table's inputs from one source topic.
func (r *run) xdir(ts *tableState, topic string) string {
	x := r.opts.Exchange
	return filepath.Join(x.Dir, strconv.Itoa(int(x.Count)), url.PathEscape(ts.t.Name), url.PathEscape(topic))
}

func xinputs(dir string, p, to int32) string {
	return filepath.Join(dir, fmt.Sprintf("p%d.to%d", p, to))
}

func xmetaFile(dir string, p int32) string { return filepath.Join(dir, fmt.Sprintf("p%d.meta", p)) }

// xgoneFile says a shard could not list the topic's partitions: it sends
// none of its own.
func xgoneFile(dir string, from int32) string {
	return filepath.Join(dir, fmt.Sprintf("gone.%d", from))
}

// sendGone tells the other shards that this one cannot send its
// partitions of topic (it could not list them): to them, they are
// unreadable, as a partition a shard cannot read is.
func (r *run) sendGone(ts *tableState, topic string) error {
	dir := r.xdir(ts, topic)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("send the inputs of %s: %w", topic, err)
	}
	if err := writeWhole(xgoneFile(dir, r.opts.Exchange.Index), []byte("its partitions could not be listed\n")); err != nil {
		return fmt.Errorf("send the inputs of %s: %w", topic, err)
	}
	return nil
}

// xsend holds the inputs of the source partition being read, by the
// shard they go to.
type xsend struct {
	bufs [][]byte
}

// route adds an element of an input to the shard that owns its key (an
// element of a key no partition can be given makes the table
// unjudgeable, as inShard says).
func (r *run) route(ts *tableState, key string, x inputRec, raw []byte) {
	p := partitionOfKey(r.p.KeySerde, key, ts.rParts)
	if p < 0 {
		ts.unplaced = true
		return
	}
	to := p % r.opts.Exchange.Count
	ts.xout.bufs[to] = appendInput(ts.xout.bufs[to], key, x, raw)
}

// send writes what the shard read of its source partition p for the
// other shards: the inputs first, then the partition's meta, which says
// they are all there; a file is written whole or not at all. Its own
// shard's inputs stay in memory (tableState.xself) until it receives
// them.
func (r *run) send(ts *tableState, topic string, p int32, m xmeta) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("send the inputs of %s-%d: %w", topic, p, err)
		}
	}()
	dir := r.xdir(ts, topic)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	self := r.opts.Exchange.Index
	for to, b := range ts.xout.bufs {
		if int32(to) == self {
			if ts.xself == nil {
				ts.xself = map[int32][]byte{}
			}
			ts.xself[p] = b
			continue
		}
		if err := writeWhole(xinputs(dir, p, int32(to)), b); err != nil {
			return err
		}
	}
	ts.xout = nil
	mb, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return writeWhole(xmetaFile(dir, p), mb)
}

// writeWhole writes b to path through a temporary file renamed over it.
func writeWhole(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), path)
}

// receive adds the shard's inputs of every partition of the table's
// src-th source topic, n partitions, in partition order: from the files
// their owners wrote, or from memory for its own (send); a partition it
// does not own also tells it what reading it would have (xmeta).
func (r *run) receive(ctx context.Context, ts *tableState, src int, topic string, n int32) error {
	x := r.opts.Exchange
	dir := r.xdir(ts, topic)
	for p := range n {
		tp := audit.TopicPartition{Topic: topic, Partition: p}
		owner := p % x.Count
		if owner == x.Index {
			b := ts.xself[p]
			delete(ts.xself, p)
			if err := r.receiveInputs(ctx, ts, bytes.NewReader(b), uint64(len(b))); err != nil {
				return fmt.Errorf("receive the inputs of %s: %w", tp, err)
			}
			continue
		}
		if err := r.receiveFrom(ctx, ts, src, dir, tp, owner); err != nil {
			return fmt.Errorf("receive the inputs of %s from shard %d/%d: %w", tp, owner, x.Count, err)
		}
	}
	return nil
}

// receiveFrom adds the shard's inputs of tp, which another shard, owner,
// reads, once it has sent them.
func (r *run) receiveFrom(ctx context.Context, ts *tableState, src int, dir string, tp audit.TopicPartition, owner int32) error {
	m, err := r.awaitMeta(ctx, dir, tp, owner)
	if err != nil {
		return err
	}
	r.foreignMeta(ts, src, tp, m)
	if m.gone {
		return nil // nothing was sent
	}
	f, err := os.Open(xinputs(dir, tp.Partition, r.opts.Exchange.Index))
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	return r.receiveInputs(ctx, ts, bufio.NewReaderSize(f, 1<<16), uint64(st.Size()))
}

// awaitMeta waits for owner to have sent its inputs of tp.
func (r *run) awaitMeta(ctx context.Context, dir string, tp audit.TopicPartition, owner int32) (xmeta, error) {
	x := r.opts.Exchange
	wait := x.Wait
	if wait <= 0 {
		wait = 30 * time.Minute
	}
	deadline := time.Now().Add(wait)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		b, err := os.ReadFile(xmetaFile(dir, tp.Partition))
		if err == nil {
			var m xmeta
			return m, json.Unmarshal(b, &m)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return xmeta{}, err
		}
		if _, err := os.Stat(xgoneFile(dir, owner)); err == nil {
			return xmeta{gone: true, Unreadable: fmt.Sprintf("source partition could not be read: shard %d/%d, which reads it, could not list %s's partitions", owner, x.Count, tp.Topic)}, nil
		}
		if time.Now().After(deadline) {
			return xmeta{}, fmt.Errorf("none in %s after %s (the shards of a run that exchange inputs must all run at once: --exchange)", dir, wait)
		}
		select {
		case <-ctx.Done():
			return xmeta{}, ctx.Err()
		case <-tick.C:
		}
	}
}

// foreignMeta does what reading a partition the shard does not own would
// have done to the table (readSourceTopic's foreign partitions).
func (r *run) foreignMeta(ts *tableState, src int, tp audit.TopicPartition, m xmeta) {
	ts.multiElem = ts.multiElem || m.MultiElem
	ts.unplaced = ts.unplaced || m.Unplaced
	if m.Unreadable != "" {
		ts.unreadable = append(ts.unreadable, tp)
		r.missing("%s (read for the inputs of this shard's keys): %s", tp, m.Unreadable)
		ts.complete = false
		return
	}
	if m.LogStart > 0 {
		ts.complete = false
		ts.deletedFrom[sourcePart(src, tp.Partition)] = true
		ts.deletedOffsets += m.LogStart
	}
	if m.Incomplete {
		ts.complete = false
	}
}

// receiveInputs adds the inputs rd holds, size bytes of appendInput's
// records, to the table, as addElement adds those of a partition it
// reads.
func (r *run) receiveInputs(ctx context.Context, ts *tableState, rd byteReader, size uint64) error {
	return readInputs(rd, size, func(kb []byte, x inputRec, raw []byte) error {
		ts.elements++
		if x.elem == 0 {
			ts.consumedWithKey++
		}
		if ts.spill != nil {
			ts.spill.addInput(string(kb), x, raw)
			return nil
		}
		return r.addRecorded(ctx, ts, kb, x, raw)
	})
}
