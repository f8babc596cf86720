package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Oracle classes of a mutation: what a run on it may say.
const (
	// classEvidence: the mutation breaks evidence the audit reads and the
	// break is detectable (a CRC, a sha256 in the manifest, a file that is
	// not regular or not readable, a batch cut short, a claim the file
	// contradicts). A clean, loss or anomaly verdict with no missing
	// evidence that differs from the unmutated run is a confident wrong
	// verdict; a new loss finding other than unreadable/undecodable (or,
	// for a cut or a deletion, truncated/offset-gap) is a misleading cause.
	classEvidence = "evidence"
	// classUncovered: bytes of a log dir no checksum covers (a batch's base
	// offset and partition leader epoch): the result is a possible broker
	// state; only panics, hangs and writes count, and changed verdicts are
	// listed for judgement.
	classUncovered = "uncovered"
	// classPlausible: the mutated log dir or manifest is a state a real
	// broker or capture can be in (a log cut at a batch boundary, an empty
	// segment, a JSON-valid manifest edit that leaves every file's hash and
	// size alone): as classUncovered.
	classPlausible = "plausible"
	// classMetadata: a log dir's index, checkpoint or metadata file: kaudit
	// may read it or not; as classUncovered.
	classMetadata = "metadata"
	// classSpec: the user's spec, flipped: a different question, not
	// broken evidence; only panics, hangs and writes count.
	classSpec = "spec"
)

// target is one fixture the mutations start from.
type target struct {
	name   string
	kind   string   // snapshot, logdir
	src    string   // bundle or log dir, relative to the repository root
	extra  []string // other files copied beside it, same relative paths
	args   []string // kaudit arguments; {D} is the copied bundle/log dir, {R} the run root
	weight int      // share of the random mutations
	// sameAs names the target whose random mutations this one runs too
	// (its other command on the same fixture; spec flips left out)
	sameAs string
	// damaged: the target also runs on every damaged bundle of its
	// fixture (damaged.go)
	damaged bool
}

func targets() []target {
	return []target{
		{name: "incidents/dropped snapshot", kind: "snapshot", src: "testdata/incidents/dropped", extra: []string{"testdata/incidents/dropped.kaudit.yaml"},
			args: []string{"diff", "--snapshot", "{D}", "--spec", "{R}/testdata/incidents/dropped.kaudit.yaml", "--format", "json"}, weight: 36},
		{name: "bad/snapshot/base", kind: "snapshot", src: "testdata/bad/snapshot/base", extra: []string{"testdata/bad/spec/good/kaudit.yaml", "testdata/bad/spec/topology-good.txt"},
			args: []string{"diff", "--snapshot", "{D}", "--spec", "{R}/testdata/bad/spec/good/kaudit.yaml", "--format", "json"}, weight: 18},
		{name: "real kafka-3.6.2 log dir (diff)", kind: "logdir", src: "audit/segment/testdata/real/kafka-3.6.2-logdir",
			args: []string{"diff", "--log-dir", "{D}", "--app-id", "gen-app", "--format", "json"}, weight: 18},
		{name: "real kafka-4.1.1 log dir (diff)", kind: "logdir", src: "audit/segment/testdata/real/kafka-4.1.1-logdir",
			args: []string{"diff", "--log-dir", "{D}", "--app-id", "gen-app", "--format", "json"}, weight: 18},
		{name: "bad/logdir/good (ledger)", kind: "logdir", src: "testdata/bad/logdir/good",
			args: []string{"ledger", "--log-dir", "{D}", "--topic", "events", "--format", "json"}, weight: 10},
		// without a spec: the spec inferred from the (mutated) evidence
		{name: "incidents/dropped snapshot (--app-id)", kind: "snapshot", src: "testdata/incidents/dropped", sameAs: "incidents/dropped snapshot", damaged: true,
			args: []string{"diff", "--snapshot", "{D}", "--app-id", "kaudit-drill", "--format", "json"}},
		{name: "incidents/dropped snapshot (init)", kind: "snapshot", src: "testdata/incidents/dropped", sameAs: "incidents/dropped snapshot", damaged: true,
			args: []string{"init", "--snapshot", "{D}", "--app-id", "kaudit-drill"}},
		{name: "real kafka-3.6.2 log dir (init)", kind: "logdir", src: "audit/segment/testdata/real/kafka-3.6.2-logdir", sameAs: "real kafka-3.6.2 log dir (diff)",
			args: []string{"init", "--log-dir", "{D}", "--app-id", "gen-app"}},
		{name: "real kafka-4.1.1 log dir (init)", kind: "logdir", src: "audit/segment/testdata/real/kafka-4.1.1-logdir", sameAs: "real kafka-4.1.1 log dir (diff)",
			args: []string{"init", "--log-dir", "{D}", "--app-id", "gen-app"}},
		// Kafka's own WordCountDemo, no topology (the draft's search for
		// outputs without one) and a commit history: damaged bundles only
		{name: "apps/wordcount snapshot (--app-id)", kind: "snapshot", src: "testdata/apps/wordcount", damaged: true,
			args: []string{"diff", "--snapshot", "{D}", "--app-id", "streams-wordcount", "--format", "json"}},
		{name: "apps/wordcount snapshot (init)", kind: "snapshot", src: "testdata/apps/wordcount", damaged: true,
			args: []string{"init", "--snapshot", "{D}", "--app-id", "streams-wordcount"}},
	}
}

// mutation is one deterministic change to a copied fixture.
type mutation struct {
	target *target
	seq    int
	kind   string
	file   string // relative to the bundle/log dir
	desc   string
	class  string
	nobody bool
	// strict: every run must say the evidence is damaged (a damaged
	// bundle, damaged.go): a confident verdict is wrong even when it is
	// the unmutated run's
	strict bool
	apply  func(d, outside string) error
}

// batchSpan is where one record batch lies in a .log file.
type batchSpan struct{ start, end int }

// batchesOf splits a .log into its batches, stopping at the first one whose
// length does not fit.
func batchesOf(b []byte) []batchSpan {
	var spans []batchSpan
	for p := 0; p+61 <= len(b); {
		n := int(int32(binary.BigEndian.Uint32(b[p+8:])))
		if n < 49 || p+12+n > len(b) {
			break
		}
		spans = append(spans, batchSpan{p, p + 12 + n})
		p += 12 + n
	}
	return spans
}

// fixture is a target's files, read once.
type fixture struct {
	logs  []string // .log files with at least one batch
	metas []string // other files (log dirs)
	dirs  []string // partition dirs (log dirs)
	data  map[string][]byte
}

func loadFixture(root string, t *target) (*fixture, error) {
	fx := &fixture{data: map[string][]byte{}}
	src := filepath.Join(root, t.src)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if rel != "." {
				fx.dirs = append(fx.dirs, rel)
			}
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fx.data[rel] = b
		switch {
		case strings.HasSuffix(rel, ".log") && len(batchesOf(b)) > 0:
			fx.logs = append(fx.logs, rel)
		case rel == "manifest.json" || rel == "live.json" || strings.HasSuffix(rel, ".md"):
		default:
			fx.metas = append(fx.metas, rel)
		}
		return nil
	})
	return fx, err
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// rewrite returns an apply that writes f(original bytes) to file.
func rewrite(file string, orig []byte, f func(b []byte) []byte) func(d, _ string) error {
	return func(d, _ string) error {
		return os.WriteFile(filepath.Join(d, file), f(slices.Clone(orig)), 0o644)
	}
}

func flipAt(pos int, x byte) func(b []byte) []byte {
	return func(b []byte) []byte { b[pos] ^= x; return b }
}

// logMutation makes one mutation of a .log file.
func logMutation(r *rand.Rand, t *target, fx *fixture) mutation {
	file := pick(r, fx.logs)
	orig := fx.data[file]
	spans := batchesOf(orig)
	bi := r.IntN(len(spans))
	s := spans[bi]
	x := byte(1 + r.IntN(255))
	m := mutation{target: t, file: file, class: classEvidence}
	kinds := []string{"flip-record", "flip-record", "flip-record", "flip-crc", "flip-magic", "flip-length", "flip-base-offset", "flip-epoch",
		"claim-length", "claim-count", "truncate-mid", "truncate-boundary", "zero-length", "delete", "symlink-dev-zero", "symlink-outside", "perm-denied"}
	m.kind = pick(r, kinds)
	at := func(lo, hi int) int { return lo + r.IntN(hi-lo) }
	switch m.kind {
	case "flip-record":
		p := at(s.start+21, s.end)
		m.desc, m.apply = fmt.Sprintf("batch %d byte %d ^%#x (CRC-covered)", bi, p-s.start, x), rewrite(file, orig, flipAt(p, x))
	case "flip-crc":
		p := at(s.start+17, s.start+21)
		m.desc, m.apply = fmt.Sprintf("batch %d CRC byte %d ^%#x", bi, p-s.start, x), rewrite(file, orig, flipAt(p, x))
	case "flip-magic":
		m.desc, m.apply = fmt.Sprintf("batch %d magic ^%#x", bi, x), rewrite(file, orig, flipAt(s.start+16, x))
	case "flip-length":
		p := at(s.start+8, s.start+12)
		m.desc, m.apply = fmt.Sprintf("batch %d length byte %d ^%#x", bi, p-s.start, x), rewrite(file, orig, flipAt(p, x))
	case "flip-base-offset":
		p := at(s.start, s.start+8)
		m.desc, m.apply = fmt.Sprintf("batch %d base offset byte %d ^%#x", bi, p-s.start, x), rewrite(file, orig, flipAt(p, x))
		if t.kind == "logdir" {
			m.class = classUncovered
		}
	case "flip-epoch":
		p := at(s.start+12, s.start+16)
		m.desc, m.apply = fmt.Sprintf("batch %d leader epoch byte %d ^%#x", bi, p-s.start, x), rewrite(file, orig, flipAt(p, x))
		if t.kind == "logdir" {
			m.class = classUncovered
		}
	case "claim-length":
		v := pick(r, []uint32{math.MaxInt32, 1 << 30, uint32(len(orig) - s.start - 12 + 1), 64 << 20})
		m.desc = fmt.Sprintf("batch %d length claims %d", bi, v)
		m.apply = rewrite(file, orig, func(b []byte) []byte { binary.BigEndian.PutUint32(b[s.start+8:], v); return b })
	case "claim-count":
		v := pick(r, []uint32{math.MaxInt32, 1 << 30, 1 << 20})
		m.desc = fmt.Sprintf("batch %d record count claims %d", bi, v)
		m.apply = rewrite(file, orig, func(b []byte) []byte { binary.BigEndian.PutUint32(b[s.start+57:], v); return b })
	case "truncate-mid":
		p := at(s.start+1, s.end)
		m.desc = fmt.Sprintf("cut at byte %d (inside batch %d)", p, bi)
		m.apply = rewrite(file, orig, func(b []byte) []byte { return b[:p] })
	case "truncate-boundary":
		m.desc = fmt.Sprintf("cut at byte %d (before batch %d of %d)", s.start, bi, len(spans))
		m.apply = rewrite(file, orig, func(b []byte) []byte { return b[:s.start] })
		if t.kind == "logdir" {
			m.class = classPlausible
		}
	case "zero-length":
		m.desc = "emptied"
		m.apply = rewrite(file, orig, func([]byte) []byte { return nil })
		if t.kind == "logdir" {
			m.class = classPlausible
		}
	case "delete":
		m.desc = "deleted"
		m.apply = func(d, _ string) error { return os.Remove(filepath.Join(d, file)) }
	case "symlink-dev-zero":
		m.desc = "a symlink to /dev/zero"
		m.apply = symlinkTo(file, "/dev/zero")
	case "symlink-outside":
		other := pick(r, fx.logs)
		m.desc = "a symlink out of the dir, to a copy of " + other
		if t.kind == "logdir" {
			m.class = classPlausible // a log dir may hold symlinks to regular files
		}
		m.apply = func(d, outside string) error {
			if err := os.WriteFile(outside, fx.data[other], 0o644); err != nil {
				return err
			}
			return symlinkTo(file, outside)(d, "")
		}
	case "perm-denied":
		m.desc, m.nobody = "mode 000 (run as uid 65534)", true
		m.apply = func(d, _ string) error { return os.Chmod(filepath.Join(d, file), 0) }
	}
	return m
}

func symlinkTo(file, to string) func(d, _ string) error {
	return func(d, _ string) error {
		p := filepath.Join(d, file)
		if err := os.Remove(p); err != nil {
			return err
		}
		return os.Symlink(to, p)
	}
}

// manifestMutation makes one mutation of a snapshot's manifest.json.
func manifestMutation(r *rand.Rand, t *target, fx *fixture) mutation {
	orig := fx.data["manifest.json"]
	m := mutation{target: t, file: "manifest.json", class: classEvidence}
	m.kind = pick(r, []string{"flip", "flip", "flip", "claim", "claim", "claim", "unlist", "unlist-delete", "delete", "zero-length", "symlink-dev-zero", "truncate"})
	switch m.kind {
	case "flip":
		p, x := r.IntN(len(orig)), byte(1+r.IntN(255))
		b := flipAt(p, x)(slices.Clone(orig))
		if json.Valid(b) && sameFiles(orig, b) {
			m.class = classPlausible
		}
		m.desc, m.apply = fmt.Sprintf("byte %d ^%#x (%q)", p, x, string(orig[max(0, p-12):min(len(orig), p+4)])), rewrite("manifest.json", orig, func([]byte) []byte { return b })
	case "truncate":
		p := r.IntN(len(orig))
		m.desc, m.apply = fmt.Sprintf("cut at byte %d", p), rewrite("manifest.json", orig, func(b []byte) []byte { return b[:p] })
	case "claim", "unlist", "unlist-delete":
		var doc map[string]any
		if err := json.Unmarshal(orig, &doc); err != nil {
			panic(err)
		}
		var deleted string
		switch m.kind {
		case "claim":
			var sub string
			m.desc, sub = claim(r, doc)
			m.kind = "claim-" + sub
			if sub == "group" {
				// any committed offset is a possible capture; one above
				// the log end is what an unclean election leaves
				m.class = classPlausible
			}
		default:
			files := doc["files"].([]any)
			i := r.IntN(len(files))
			deleted = files[i].(map[string]any)["path"].(string)
			doc["files"] = slices.Delete(files, i, i+1)
			m.desc = "unlists " + deleted
			if m.kind == "unlist-delete" {
				m.desc += " and deletes it"
			} else {
				deleted = ""
			}
		}
		b, _ := json.MarshalIndent(doc, "", "  ")
		m.apply = func(d, _ string) error {
			if deleted != "" {
				if err := os.Remove(filepath.Join(d, filepath.FromSlash(deleted))); err != nil {
					return err
				}
			}
			return os.WriteFile(filepath.Join(d, "manifest.json"), b, 0o644)
		}
	case "delete":
		m.desc, m.apply = "deleted", func(d, _ string) error { return os.Remove(filepath.Join(d, "manifest.json")) }
	case "zero-length":
		m.desc, m.apply = "emptied", rewrite("manifest.json", orig, func([]byte) []byte { return nil })
	case "symlink-dev-zero":
		m.desc, m.apply = "a symlink to /dev/zero", symlinkTo("manifest.json", "/dev/zero")
	}
	return m
}

// sameFiles reports whether two manifests list the same files, sizes and
// hashes (a JSON-valid edit elsewhere is a possible capture).
func sameFiles(a, b []byte) bool {
	var x, y struct {
		Files []struct {
			Path   string `json:"path"`
			Size   int64  `json:"size"`
			SHA256 string `json:"sha256"`
		} `json:"files"`
	}
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return slices.Equal(x.Files, y.Files)
}

// claim sets one number of the manifest to a value the files contradict.
func claim(r *rand.Rand, doc map[string]any) (desc, what string) {
	vals := []float64{1 << 62, -5, 1 << 40}
	switch r.IntN(3) {
	case 0:
		ps := doc["partitions"].([]any)
		p := ps[r.IntN(len(ps))].(map[string]any)
		field := pick(r, []string{"hw", "lso", "log_start", "next", "records", "bytes", "captured_from"})
		old, _ := p[field].(float64)
		v := pick(r, append(vals, old+1, old+1000))
		p[field] = v
		return fmt.Sprintf("%s/%v %s %v -> %v", p["topic"], p["partition"], field, old, v), "partition"
	case 1:
		fs := doc["files"].([]any)
		f := fs[r.IntN(len(fs))].(map[string]any)
		old, _ := f["size"].(float64)
		v := pick(r, []float64{1 << 40, 0, old - 1, old + 1})
		f["size"] = v
		return fmt.Sprintf("file %s size %v -> %v", f["path"], old, v), "file-size"
	default:
		g, _ := doc["group"].(map[string]any)
		offs, _ := g["offsets"].([]any)
		if len(offs) == 0 {
			return "no group offsets", "group"
		}
		o := offs[r.IntN(len(offs))].(map[string]any)
		old, _ := o["offset"].(float64)
		v := pick(r, []float64{1 << 62, -42, old + 1000})
		o["offset"] = v
		return fmt.Sprintf("group offset %s/%v %v -> %v", o["topic"], o["partition"], old, v), "group"
	}
}

// metaMutation changes a log dir's non-segment file or removes a partition dir.
func metaMutation(r *rand.Rand, t *target, fx *fixture) mutation {
	m := mutation{target: t, class: classMetadata}
	if len(fx.metas) == 0 || r.IntN(5) == 0 {
		dir := pick(r, fx.dirs)
		m.kind, m.file, m.desc, m.class = "delete-dir", dir, "partition dir removed", classEvidence
		m.apply = func(d, _ string) error { return os.RemoveAll(filepath.Join(d, dir)) }
		return m
	}
	file := pick(r, fx.metas)
	orig := fx.data[file]
	m.file = file
	m.kind = pick(r, []string{"flip", "flip", "zero-length", "delete", "symlink-dev-zero"})
	switch {
	case m.kind == "flip" && len(orig) > 0:
		p, x := r.IntN(len(orig)), byte(1+r.IntN(255))
		m.desc, m.apply = fmt.Sprintf("byte %d ^%#x", p, x), rewrite(file, orig, flipAt(p, x))
	case m.kind == "delete":
		m.desc, m.apply = "deleted", func(d, _ string) error { return os.Remove(filepath.Join(d, file)) }
	case m.kind == "symlink-dev-zero":
		m.desc, m.apply = "a symlink to /dev/zero", symlinkTo(file, "/dev/zero")
	default:
		m.kind, m.desc = "zero-length", "emptied"
		m.apply = rewrite(file, orig, func([]byte) []byte { return nil })
	}
	return m
}

// specMutation flips a byte of the spec beside a snapshot.
func specMutation(r *rand.Rand, t *target, root string) mutation {
	rel := t.extra[0]
	orig, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		panic(err)
	}
	p, x := r.IntN(len(orig)), byte(1+r.IntN(255))
	return mutation{target: t, kind: "flip", file: rel, class: classSpec, desc: fmt.Sprintf("byte %d ^%#x", p, x),
		apply: func(_, runRoot string) error {
			return os.WriteFile(filepath.Join(runRoot, rel), flipAt(p, x)(slices.Clone(orig)), 0o644)
		}}
}

// rehashable are the .log mutations that leave a regular file whose hash
// and size can be written into the manifest, as someone editing a bundle
// would.
var rehashable = map[string]bool{"flip-record": true, "flip-crc": true, "flip-magic": true, "flip-length": true, "flip-base-offset": true,
	"flip-epoch": true, "claim-length": true, "claim-count": true, "truncate-mid": true, "truncate-boundary": true, "zero-length": true}

// rehashed makes the manifest agree with the mutated file's size and
// sha256: only the bundle's own checks (CRC, offsets, sizes) can tell.
// A base offset or leader epoch no checksum covers is then uncovered.
func rehashed(m mutation) mutation {
	apply := m.apply
	m.kind += "+rehash"
	m.desc += ", manifest rehashed"
	if strings.HasPrefix(m.kind, "flip-base-offset") || strings.HasPrefix(m.kind, "flip-epoch") {
		m.class = classUncovered
	}
	m.apply = func(d, outside string) error {
		if err := apply(d, outside); err != nil {
			return err
		}
		b, err := os.ReadFile(filepath.Join(d, filepath.FromSlash(m.file)))
		if err != nil {
			return err
		}
		mp := filepath.Join(d, "manifest.json")
		mb, err := os.ReadFile(mp)
		if err != nil {
			return err
		}
		var doc map[string]any
		if err := json.Unmarshal(mb, &doc); err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		for _, f := range doc["files"].([]any) {
			if f := f.(map[string]any); f["path"] == filepath.ToSlash(m.file) {
				f["size"], f["sha256"] = len(b), hex.EncodeToString(sum[:])
			}
		}
		out, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(mp, out, 0o644)
	}
	return m
}

// mutations makes n mutations over the targets, by weight, from seed;
// the targets with sameAs run their namesake's too and, with damaged,
// every damaged bundle of their fixture.
func mutations(root string, seed uint64, n int, damaged bool) ([]mutation, error) {
	ts := targets()
	total := 0
	for _, t := range ts {
		total += t.weight
	}
	var ms []mutation
	for i := range ts {
		t := &ts[i]
		if t.weight == 0 {
			continue
		}
		fx, err := loadFixture(root, t)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", t.name, err)
		}
		k := (n*t.weight + total - 1) / total
		r := rand.New(rand.NewPCG(seed, uint64(i)))
		for j := range k {
			var m mutation
			u := r.IntN(100)
			switch {
			case t.kind == "snapshot" && u < 25:
				m = manifestMutation(r, t, fx)
			case t.kind == "snapshot" && u < 30:
				m = specMutation(r, t, root)
			case t.kind == "logdir" && u < 28 && len(fx.dirs) > 0:
				m = metaMutation(r, t, fx)
			default:
				m = logMutation(r, t, fx)
				if t.kind == "snapshot" && rehashable[m.kind] && r.IntN(2) == 0 {
					m = rehashed(m)
				}
			}
			m.seq = j
			ms = append(ms, m)
		}
	}
	var more []mutation
	for i := range ts {
		t := &ts[i]
		if t.sameAs != "" {
			for _, m := range ms {
				if m.target.name == t.sameAs && m.class != classSpec {
					m.target = t
					more = append(more, m)
				}
			}
		}
		if t.damaged && damaged {
			fx, err := loadFixture(root, t)
			if err != nil {
				return nil, fmt.Errorf("load %s: %w", t.name, err)
			}
			more = append(more, damagedBundles(t, fx)...)
		}
	}
	return append(ms, more...), nil
}

// verdictOf is one run's classification.
type verdictOf struct {
	m          *mutation
	res        result
	out        outcome
	wrote      []string
	confident  bool     // clean/loss/anomaly with no missing evidence
	same       bool     // verdict and loss findings as the unmutated run
	wrong      bool     // confident, not same, on broken evidence
	misleading []string // new loss findings whose cause is not what the mutation did
	setupErr   error
}

// allowed are the causes a new loss finding may name after a mutation.
func allowed(kind string) []string {
	kind = strings.TrimSuffix(kind, "+rehash")
	a := []string{"unreadable", "undecodable"}
	if kind == "claim-group" {
		// a committed offset above the log end is what an unclean
		// election leaves: truncated is the right name for it
		a = append(a, "truncated")
	}
	if d, ok := strings.CutPrefix(kind, "damaged "); ok && (strings.HasPrefix(d, "cut") || d == "removed" || d == "emptied") {
		a = append(a, "truncated", "offset-gap")
	}
	if strings.HasPrefix(kind, "truncate") || kind == "delete" || kind == "zero-length" || kind == "delete-dir" || kind == "unlist-delete" {
		a = append(a, "truncated", "offset-gap")
	}
	return a
}

// judge classifies one run against the unmutated run of its target.
func judge(m *mutation, base outcome, res result, wrote []string) verdictOf {
	v := verdictOf{m: m, res: res, wrote: wrote}
	v.out = parseOutcome(res.stdout, res.code)
	if res.hang || res.panicked || (res.code != 0 && res.code != 1) {
		return v
	}
	o := v.out
	v.confident = o.parsed && (o.verdict == "clean" || o.verdict == "loss" || o.verdict == "anomaly") && !o.qualified()
	v.same = o.verdict == base.verdict && slices.Equal(o.losses(), base.losses())
	if m.class == classEvidence {
		v.wrong = v.confident && (!v.same || m.strict)
		baseIDs := base.losses()
		for _, f := range o.findings {
			if f.Severity == "loss" && !slices.Contains(baseIDs, f.id()) && !slices.Contains(allowed(m.kind), f.Cause) {
				v.misleading = append(v.misleading, f.id())
			}
		}
	}
	return v
}

// evidenceReport is the figures of section 1.
type evidenceReport struct {
	runs      []verdictOf
	baselines map[string]outcome
	elapsed   time.Duration
}

// runEvidence copies, mutates and audits every mutation, jobs at a time.
func runEvidence(root, bin, work string, seed uint64, n int, damaged bool, jobs int, timeout time.Duration, logf func(string, ...any)) (*evidenceReport, error) {
	start := time.Now()
	ms, err := mutations(root, seed, n, damaged)
	if err != nil {
		return nil, err
	}
	rep := &evidenceReport{baselines: map[string]outcome{}}
	// The unmutated runs, twice each: they must agree.
	for _, t := range targets() {
		var outs [2]outcome
		for i := range 2 {
			runRoot := filepath.Join(work, fmt.Sprintf("base-%s-%d", slug(t.name), i))
			if err := stage(root, runRoot, &t); err != nil {
				return nil, err
			}
			res := runKaudit(bin, runOpts{dir: filepath.Join(runRoot, "cwd"), timeout: timeout}, expand(t.args, runRoot, &t)...)
			outs[i] = parseOutcome(res.stdout, res.code)
			if !outs[i].parsed || res.code > 1 {
				return nil, fmt.Errorf("unmutated %s: exit %d: %s", t.name, res.code, trim(res.stderr, 300))
			}
			os.RemoveAll(runRoot)
		}
		if outs[0].verdict != outs[1].verdict || !slices.Equal(outs[0].losses(), outs[1].losses()) {
			return nil, fmt.Errorf("unmutated %s: two runs disagree", t.name)
		}
		rep.baselines[t.name] = outs[0]
		logf("baseline %s: verdict %s, %d loss findings", t.name, outs[0].verdict, len(outs[0].losses()))
	}
	rep.runs = make([]verdictOf, len(ms))
	var wg sync.WaitGroup
	next := make(chan int)
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				rep.runs[i] = runOne(root, bin, work, &ms[i], rep.baselines[ms[i].target.name], timeout, i)
			}
		}()
	}
	for i := range ms {
		next <- i
		if i%200 == 199 {
			logf("mutations: %d/%d", i+1, len(ms))
		}
	}
	close(next)
	wg.Wait()
	rep.elapsed = time.Since(start)
	return rep, nil
}

func runOne(root, bin, work string, m *mutation, base outcome, timeout time.Duration, i int) verdictOf {
	runRoot := filepath.Join(work, fmt.Sprintf("run-%05d", i))
	defer os.RemoveAll(runRoot)
	t := m.target
	if err := stage(root, runRoot, t); err != nil {
		return verdictOf{m: m, setupErr: err}
	}
	d := filepath.Join(runRoot, filepath.FromSlash(t.src))
	var err error
	if m.class == classSpec {
		err = m.apply(d, runRoot)
	} else {
		err = m.apply(d, filepath.Join(runRoot, "outside.log"))
	}
	if err != nil {
		return verdictOf{m: m, setupErr: err}
	}
	before, err := treeState(runRoot)
	if err != nil {
		return verdictOf{m: m, setupErr: err}
	}
	res := runKaudit(bin, runOpts{dir: filepath.Join(runRoot, "cwd"), nobody: m.nobody && os.Geteuid() == 0, timeout: timeout}, expand(t.args, runRoot, t)...)
	after, err := treeState(runRoot)
	if err != nil {
		return verdictOf{m: m, setupErr: err}
	}
	return judge(m, base, res, sameTree(before, after))
}

// stage copies a target's fixture into runRoot at the same relative paths,
// with an empty working directory cwd beside it.
func stage(root, runRoot string, t *target) error {
	for _, rel := range append([]string{t.src}, t.extra...) {
		src, dst := filepath.Join(root, rel), filepath.Join(runRoot, rel)
		info, err := os.Stat(src)
		if err != nil {
			return err
		}
		if info.IsDir() {
			err = copyTree(src, dst)
		} else if err = os.MkdirAll(filepath.Dir(dst), 0o755); err == nil {
			var b []byte
			if b, err = os.ReadFile(src); err == nil {
				err = os.WriteFile(dst, b, 0o644)
			}
		}
		if err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(runRoot, "cwd"), 0o777); err != nil {
		return err
	}
	// uid 65534 must reach everything but the file made unreadable.
	return filepath.WalkDir(runRoot, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && filepath.Base(p) != "cwd" {
			err = os.Chmod(p, 0o755)
		}
		return err
	})
}

func expand(args []string, runRoot string, t *target) []string {
	out := make([]string, len(args))
	for i, a := range args {
		a = strings.ReplaceAll(a, "{D}", filepath.Join(runRoot, filepath.FromSlash(t.src)))
		out[i] = strings.ReplaceAll(a, "{R}", runRoot)
	}
	return out
}

func slug(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(s))
}

// evidenceRow is one line of section 1's table.
type evidenceRow struct {
	name                                            string
	tried, setup                                    int
	codes                                           map[int]int
	panics, hangs, termFail, wrote                  int
	confidentSame, confidentDiff, wrong, misleading int
	qualified                                       int
}

// rows groups the runs by by; a run whose key is "" is left out.
func (rep *evidenceReport) rows(by func(v verdictOf) string) []*evidenceRow {
	rows := map[string]*evidenceRow{}
	var names []string
	for _, v := range rep.runs {
		k := by(v)
		if k == "" {
			continue
		}
		r := rows[k]
		if r == nil {
			r = &evidenceRow{name: k, codes: map[int]int{}}
			rows[k] = r
			names = append(names, k)
		}
		r.tried++
		if v.setupErr != nil {
			r.setup++
			continue
		}
		r.codes[v.res.code]++
		if v.res.panicked {
			r.panics++
		}
		if v.res.hang {
			r.hangs++
			if !v.res.termOK {
				r.termFail++
			}
		}
		if len(v.wrote) > 0 {
			r.wrote++
		}
		switch {
		case v.confident && v.same:
			r.confidentSame++
		case v.confident:
			r.confidentDiff++
		case v.out.parsed && v.out.qualified():
			r.qualified++
		}
		if v.wrong {
			r.wrong++
		}
		if len(v.misleading) > 0 {
			r.misleading++
		}
	}
	sort.Strings(names)
	out := make([]*evidenceRow, len(names))
	for i, n := range names {
		out[i] = rows[n]
	}
	return out
}
