package reconcile

// The shards of one run hand each other the inputs of re-keyed tables
// (Options.Exchange), so that together they read each source record once.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/internal/dest"
	bounded "github.com/kaudit/kaudit/internal/input"
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
// Each file names the run, the evidence (Fingerprint), the shard that
// wrote it and the one it is for, the table, the topic and the source
// partitions it holds, and its payload's length and checksum; a file that
// does not name this run's, or whose payload does not match, is refused
// (ErrExchangeRefused): never read, waited past, and named when the wait
// ends.
type Exchange struct {
	// Dir is the folder every shard mounts: it must exist (it is never
	// created); the run's files go under Dir/Run/Count/<table>/<topic>/.
	Dir string
	// Run names the run (kaudit diff --run-id): "" puts its files in Dir.
	Run string
	// Fingerprint names the evidence the run reads (audit.Fingerprint):
	// every shard of one run computes the same.
	Fingerprint string
	// Index and Count say which shard this is: Options.Partitions are
	// the task partitions p < Tasks with p % Count == Index.
	Index, Count, Tasks int32
	Wait                time.Duration
}

// ErrExchangeRefused is wrapped by the error of a shard that found only
// files it refused where another's inputs should be.
var ErrExchangeRefused = errors.New("refused")

// RunDir is the folder of run's files under dir: run (escaped) is one
// name in it, never a way out of it (internal/dest).
func RunDir(dir, run string) (string, error) {
	if run == "" {
		return dir, nil
	}
	return dest.Join(dir, url.PathEscape(run))
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
	// Inputs holds, by the shard they are for, the checksum of the
	// inputs file the owner wrote with this meta
	Inputs map[int32]string `json:"inputs"`
	// gone: the owner sent nothing (xgoneFile)
	gone bool
}

// xmagic starts every exchange file, before its header (xheader, one
// line of JSON) and its payload.
const xmagic = "kaudit-exchange 1 "

// xheader is what an exchange file says it is.
type xheader struct {
	Run         string `json:"run"`
	Fingerprint string `json:"fingerprint"`
	// Shard wrote it (I/N); To is the shard it is for, "" for all
	Shard string `json:"shard"`
	To    string `json:"to,omitempty"`
	Table string `json:"table"`
	Topic string `json:"topic"`
	// Partitions are the source partitions it holds what of; none for
	// a gone file (all of the shard's)
	Partitions []int32 `json:"partitions"`
	Kind       string  `json:"kind"` // inputs, meta or gone
	// Bytes and Checksum (XXH3-128, hex) are the payload's
	Bytes    int64  `json:"bytes"`
	Checksum string `json:"xxh3_128"`
}

const (
	xkindInputs = "inputs"
	xkindMeta   = "meta"
	xkindGone   = "gone"
	// xmaxHeader bounds a header line; xmaxSmall a meta or gone file
	xmaxHeader = 64 << 10
	xmaxSmall  = 1 << 20
)

func shardName(i, n int32) string { return fmt.Sprintf("%d/%d", i, n) }

// xheaderFor is the header of a file this shard writes of ts's topic.
func (r *run) xheaderFor(ts *tableState, topic, kind string, parts []int32, to int32) xheader {
	x := r.opts.Exchange
	h := xheader{Run: x.Run, Fingerprint: x.Fingerprint, Shard: shardName(x.Index, x.Count), Table: ts.t.Name, Topic: topic, Partitions: parts, Kind: kind}
	if to >= 0 {
		h.To = shardName(to, x.Count)
	}
	return h
}

func checksum(b []byte) string {
	s := xxh3.Hash128(b).Bytes()
	return hex.EncodeToString(s[:])
}

// exchanging says the shard takes the inputs of the table's source topic
// from the exchange: a re-keyed table (not windowed) of a run with one,
// whose source partitions each have an owner among the shards.
func (r *run) exchanging(ts *tableState, topic string) bool {
	x := r.opts.Exchange
	return x != nil && x.Count > 0 && r.opts.Partitions != nil && ts.t.Repartition != "" && !r.p.Keyless && ts.win == nil &&
		r.topics[topic].Partitions <= x.Tasks
}

// xnames are the names of a table's folder of inputs from one source
// topic under Exchange.Dir.
func (r *run) xnames(ts *tableState, topic string) []string {
	x := r.opts.Exchange
	var names []string
	if x.Run != "" {
		names = append(names, url.PathEscape(x.Run))
	}
	return append(names, strconv.Itoa(int(x.Count)), url.PathEscape(ts.t.Name), url.PathEscape(topic))
}

// xdir is the folder of a table's inputs from one source topic.
func (r *run) xdir(ts *tableState, topic string) (string, error) {
	return dest.Join(r.opts.Exchange.Dir, r.xnames(ts, topic)...)
}

// xmkdir creates xdir under Exchange.Dir, which must exist.
func (r *run) xmkdir(ts *tableState, topic string) (string, error) {
	return dest.Mkdir(r.opts.Exchange.Dir, r.xnames(ts, topic)...)
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
	dir, err := r.xmkdir(ts, topic)
	if err != nil {
		return fmt.Errorf("send the inputs of %s: %w", topic, err)
	}
	h := r.xheaderFor(ts, topic, xkindGone, nil, -1)
	if err := writeWhole(xgoneFile(dir, r.opts.Exchange.Index), h, []byte("its partitions could not be listed\n")); err != nil {
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
	p := partitionOfKey(r.keySerde(ts.t), key, ts.rParts)
	if p < 0 {
		ts.unplaced = true
		return
	}
	to := p % r.opts.Exchange.Count
	ts.xout.bufs[to] = appendInput(ts.xout.bufs[to], key, x, raw)
}

// send writes what the shard read of its source partition p for the
// other shards: the inputs first, then the partition's meta, which says
// they are all there and names their checksums; a file is written whole
// or not at all. Its own shard's inputs stay in memory (tableState.xself)
// until it receives them.
func (r *run) send(ts *tableState, topic string, p int32, m xmeta) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("send the inputs of %s-%d: %w", topic, p, err)
		}
	}()
	dir, err := r.xmkdir(ts, topic)
	if err != nil {
		return err
	}
	self := r.opts.Exchange.Index
	m.Inputs = map[int32]string{}
	for to, b := range ts.xout.bufs {
		if int32(to) == self {
			if ts.xself == nil {
				ts.xself = map[int32][]byte{}
			}
			ts.xself[p] = b
			continue
		}
		h := r.xheaderFor(ts, topic, xkindInputs, []int32{p}, int32(to))
		if err := writeWhole(xinputs(dir, p, int32(to)), h, b); err != nil {
			return err
		}
		m.Inputs[int32(to)] = checksum(b)
	}
	ts.xout = nil
	mb, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return writeWhole(xmetaFile(dir, p), r.xheaderFor(ts, topic, xkindMeta, []int32{p}, -1), mb)
}

// writeWhole writes h, its payload's length and checksum filled in, and
// the payload to path, through a temporary file renamed over it: a shard
// run again replaces its own files (internal/dest).
func writeWhole(path string, h xheader, payload []byte) error {
	h.Bytes, h.Checksum = int64(len(payload)), checksum(payload)
	hb, err := json.Marshal(h)
	if err != nil {
		return err
	}
	return dest.Write(path, true, func(w io.Writer) error {
		if _, err := io.WriteString(w, xmagic); err != nil {
			return err
		}
		if _, err := w.Write(append(hb, '\n')); err != nil {
			return err
		}
		_, err := w.Write(payload)
		return err
	})
}

// xrefusal is why a file was refused, naming it.
func xrefusal(path, format string, args ...any) error {
	return fmt.Errorf("%w %s: %s", ErrExchangeRefused, path, fmt.Sprintf(format, args...))
}

// readHeader reads an exchange file's header from rd and checks it
// against want (all but the payload's length and checksum).
func readHeader(rd *bufio.Reader, path string, want xheader) (xheader, int, error) {
	line, err := rd.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return xheader{}, 0, xrefusal(path, "its header is longer than %d bytes", rd.Size())
	case errors.Is(err, io.EOF):
		return xheader{}, 0, xrefusal(path, "it has no header (%d bytes): not a kaudit exchange file, or cut short", len(line))
	case err != nil:
		return xheader{}, 0, err
	}
	n := len(line)
	rest, ok := bytes.CutPrefix(line, []byte(xmagic))
	var h xheader
	if !ok || json.Unmarshal(rest, &h) != nil {
		return xheader{}, 0, xrefusal(path, "it has no kaudit exchange header")
	}
	got, exp := h, want
	got.Bytes, got.Checksum, exp.Bytes, exp.Checksum = 0, "", 0, ""
	if !reflect.DeepEqual(got, exp) {
		return xheader{}, 0, xrefusal(path, "it is %s, not %s", h.describe(), want.describe())
	}
	return h, n, nil
}

// describe says what a header names, for a refusal.
func (h xheader) describe() string {
	to := ""
	if h.To != "" {
		to = " for shard " + h.To
	}
	return fmt.Sprintf("the %s of table %s, topic %s, partitions %v, from shard %s%s, of run %q on evidence %q", h.Kind, h.Table, h.Topic, h.Partitions, h.Shard, to, h.Run, h.Fingerprint)
}

// readSmall reads a meta or gone file whole and checks it: its header is
// want's, its payload's length and checksum the header's.
func readSmall(path string, want xheader) ([]byte, error) {
	b, err := bounded.Read(path, xmaxSmall)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, err
	case err != nil:
		return nil, xrefusal(path, "%v", err)
	}
	rd := bufio.NewReaderSize(bytes.NewReader(b), xmaxHeader)
	h, n, err := readHeader(rd, path, want)
	if err != nil {
		return nil, err
	}
	payload := b[n:]
	if int64(len(payload)) != h.Bytes || checksum(payload) != h.Checksum {
		return nil, xrefusal(path, "its payload (%d bytes) is not the %d its header names, or its checksum differs", len(payload), h.Bytes)
	}
	return payload, nil
}

// receive adds the shard's inputs of every partition of the table's
// src-th source topic, n partitions, in partition order: from the files
// their owners wrote, or from memory for its own (send); a partition it
// does not own also tells it what reading it would have (xmeta).
func (r *run) receive(ctx context.Context, ts *tableState, src int, topic string, n int32) error {
	x := r.opts.Exchange
	dir, err := r.xdir(ts, topic)
	if err != nil {
		return fmt.Errorf("receive the inputs of %s: %w", topic, err)
	}
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
// reads, once it has sent them: its meta, and the inputs file the meta
// names by checksum.
func (r *run) receiveFrom(ctx context.Context, ts *tableState, src int, dir string, tp audit.TopicPartition, owner int32) error {
	x := r.opts.Exchange
	wait := x.Wait
	if wait <= 0 {
		wait = 30 * time.Minute
	}
	deadline := time.Now().Add(wait)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var refused error
	for {
		m, f, err := r.sent(ts, dir, tp, owner)
		switch {
		case err == nil && m.gone:
			r.foreignMeta(ts, src, tp, m)
			return nil // nothing was sent
		case err == nil:
			defer f.Close()
			r.foreignMeta(ts, src, tp, m)
			return r.receiveFile(ctx, ts, f)
		case errors.Is(err, ErrExchangeRefused):
			refused = err // another run's, or damaged: its owner may still write its own
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
		if time.Now().After(deadline) {
			if refused != nil {
				return fmt.Errorf("%w; none acceptable in %s after %s (the shards of a run that exchange inputs must all run at once: --exchange)", refused, dir, wait)
			}
			return fmt.Errorf("none in %s after %s (the shards of a run that exchange inputs must all run at once: --exchange)", dir, wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// sent returns what owner sent of tp when it is all there and this run's:
// the meta and the inputs file for this shard, opened, its header
// checked; or a meta that says owner sent nothing (gone). An error
// wrapping fs.ErrNotExist says it is not there yet, one wrapping
// ErrExchangeRefused names a file that is not this run's.
func (r *run) sent(ts *tableState, dir string, tp audit.TopicPartition, owner int32) (xmeta, *xfile, error) {
	x := r.opts.Exchange
	b, err := readSmall(xmetaFile(dir, tp.Partition), r.xheaderFrom(ts, tp, xkindMeta, owner, -1))
	if errors.Is(err, fs.ErrNotExist) {
		// a shard that could not list the topic's partitions sends none
		path := xgoneFile(dir, owner)
		if _, gerr := readSmall(path, r.xheaderFrom(ts, audit.TopicPartition{Topic: tp.Topic, Partition: -1}, xkindGone, owner, -1)); gerr != nil {
			if errors.Is(gerr, fs.ErrNotExist) {
				return xmeta{}, nil, err
			}
			return xmeta{}, nil, gerr
		}
		return xmeta{gone: true, Unreadable: fmt.Sprintf("source partition could not be read: shard %d/%d, which reads it, could not list %s's partitions", owner, x.Count, tp.Topic)}, nil, nil
	}
	if err != nil {
		return xmeta{}, nil, err
	}
	var m xmeta
	if err := json.Unmarshal(b, &m); err != nil {
		return xmeta{}, nil, xrefusal(xmetaFile(dir, tp.Partition), "its meta does not decode: %v", err)
	}
	sum, ok := m.Inputs[x.Index]
	if !ok {
		return xmeta{}, nil, xrefusal(xmetaFile(dir, tp.Partition), "it names no inputs for shard %s", shardName(x.Index, x.Count))
	}
	f, err := openInputs(xinputs(dir, tp.Partition, x.Index), r.xheaderFrom(ts, tp, xkindInputs, owner, x.Index), sum)
	if err != nil {
		return xmeta{}, nil, err
	}
	return m, f, nil
}

// xheaderFrom is the header owner's file of tp must have (tp.Partition
// -1: a gone file, of no partition).
func (r *run) xheaderFrom(ts *tableState, tp audit.TopicPartition, kind string, owner, to int32) xheader {
	x := r.opts.Exchange
	h := xheader{Run: x.Run, Fingerprint: x.Fingerprint, Shard: shardName(owner, x.Count), Table: ts.t.Name, Topic: tp.Topic, Kind: kind}
	if tp.Partition >= 0 {
		h.Partitions = []int32{tp.Partition}
	}
	if to >= 0 {
		h.To = shardName(to, x.Count)
	}
	return h
}

// xfile is an inputs file opened at its payload, which matches its
// checksum.
type xfile struct {
	path string
	f    *os.File
	h    xheader
}

func (f *xfile) Close() error { return f.f.Close() }

// openInputs opens an inputs file and checks its header against want,
// and its payload's length and checksum against the header's and the
// meta's (sum), reading it once.
func openInputs(path string, want xheader, sum string) (*xfile, error) {
	f, err := bounded.OpenNonblock(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, xrefusal(path, "it is missing, though its partition's meta names it")
	case err != nil:
		return nil, xrefusal(path, "%v", err)
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err != nil {
			return nil, err
		}
		return nil, xrefusal(path, "it is not a regular file")
	}
	rd := bufio.NewReaderSize(f, xmaxHeader)
	h, n, err := readHeader(rd, path, want)
	switch {
	case err != nil:
		f.Close()
		return nil, err
	case h.Checksum != sum:
		f.Close()
		return nil, xrefusal(path, "its checksum is not the one its partition's meta names (written by another run of the shard?)")
	case st.Size()-int64(n) != h.Bytes:
		f.Close()
		return nil, xrefusal(path, "it holds %d bytes after its header, not the %d it names (cut short, or still written?)", st.Size()-int64(n), h.Bytes)
	}
	// the payload's checksum, before a byte of it is taken: a damaged
	// file is refused whole, as a missing one is waited for
	hash := xxh3.New()
	if _, err := io.Copy(hash, rd); err != nil {
		f.Close()
		return nil, err
	}
	if got := hash.Sum128().Bytes(); hex.EncodeToString(got[:]) != sum {
		f.Close()
		return nil, xrefusal(path, "its payload's checksum is not the one its header names: the file is damaged")
	}
	if _, err := f.Seek(int64(n), io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return &xfile{path: path, f: f, h: h}, nil
}

// receiveFile adds the inputs f holds to the table.
func (r *run) receiveFile(ctx context.Context, ts *tableState, f *xfile) error {
	if err := r.receiveInputs(ctx, ts, bufio.NewReaderSize(f.f, 1<<16), uint64(f.h.Bytes)); err != nil {
		return fmt.Errorf("read %s: %w", f.path, err)
	}
	return nil
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
