package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/internal/golden"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/segment"
	"github.com/kaudit/kaudit/audit/snapshot"
	"github.com/kaudit/kaudit/audit/statedir"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// The bad-input corpus lives in testdata/bad at the top of the repository.
// TestBadCorpus checks that it is what the generator writes; run it with
// -regen-bad to write it again.
var regenBad = flag.Bool("regen-bad", false, "rewrite the bad-input corpus under testdata/bad")

const badDir = "../../testdata/bad"

// corpusTime is the fixed clock of the generated evidence.
var corpusTime = time.Date(2026, 5, 28, 12, 0, 0, 0, time.UTC)

// corpusFile is one generated file: a path under testdata/bad and its bytes.
type corpusFile struct {
	path string
	data []byte
}

// buildCorpus generates every file of the corpus in memory. Deterministic:
// the same bytes on every run.
func buildCorpus(t *testing.T) []corpusFile {
	t.Helper()
	var files []corpusFile
	add := func(path string, data []byte) { files = append(files, corpusFile{path, data}) }
	addText := func(path, text string) { add(path, []byte(text)) }

	// Log dirs: topic "events", one partition, three batches of two records.
	seg := eventsSegment(t, 0, 6)
	batches := splitBatches(t, seg)
	if len(batches) != 3 {
		t.Fatalf("%d batches, want 3", len(batches))
	}
	logdir := func(name string, logs map[string][]byte, extra map[string]string) {
		for file, b := range logs {
			add("logdir/"+name+"/events-0/"+file, b)
		}
		for file, text := range extra {
			addText("logdir/"+name+"/"+file, text)
		}
	}
	first := segment.SegmentName(0)
	logdir("good", map[string][]byte{first: seg}, nil)
	logdir("bad-crc", map[string][]byte{first: corrupt(seg, len(batches[0])+70)}, nil)
	logdir("bad-crc-last", map[string][]byte{first: corrupt(seg, len(batches[0])+len(batches[1])+70)}, nil)
	logdir("bad-magic", map[string][]byte{first: setByte(seg, len(batches[0])+16, 9)}, nil)
	logdir("old-magic", map[string][]byte{first: setByte(seg, len(batches[0])+16, 1)}, nil)
	logdir("huge-length", map[string][]byte{first: setUint32(seg, len(batches[0])+8, 0x7fffffff)}, nil)
	logdir("negative-length", map[string][]byte{first: setUint32(seg, len(batches[0])+8, 0xffffffff)}, nil)
	logdir("zero-length", map[string][]byte{first: setUint32(seg, len(batches[0])+8, 0)}, nil)
	logdir("offset-backwards", map[string][]byte{first: setUint64(seg, len(batches[0])+len(batches[1]), 0)}, nil)
	logdir("torn-tail", map[string][]byte{first: seg[:len(seg)-25]}, nil)
	// Two segments, the older one cut in the middle of its second batch:
	// not a torn tail (the active segment is the other one).
	older := append(append([]byte{}, batches[0]...), batches[1][:30]...)
	logdir("truncated-old-segment", map[string][]byte{first: older, segment.SegmentName(4): batches[2]}, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(rng.UintN(256))
	}
	logdir("garbage", map[string][]byte{first: garbage}, nil)
	logdir("bad-index", map[string][]byte{first: seg, "00000000000000000000.index": []byte("not an index!"),
		"00000000000000000000.txnindex": bytes.Repeat([]byte{0xff}, 35), "00000000000000000000.timeindex": garbage[:13]}, nil)
	logdir("bad-checkpoints", map[string][]byte{first: seg, "leader-epoch-checkpoint": []byte("0\nbanana\n"),
		"partition.metadata": []byte("version: 9\ntopic_id: ???\n")},
		map[string]string{"log-start-offset-checkpoint": "0\n1\nevents 0 notanumber\n", "replication-offset-checkpoint": "7\n",
			"recovery-point-offset-checkpoint": "0\n5\nevents 0 3\n"})
	// Partition dirs whose numbers are out of range.
	add("logdir/partition-huge/events-0/"+first, seg)
	add("logdir/partition-huge/events-2147483647/"+first, seg)
	add("logdir/partition-overflow/events-0/"+first, seg)
	add("logdir/partition-overflow/events-99999999999/"+first, seg)
	add("logdir/partition-negative/events-0/"+first, seg)
	add("logdir/partition-negative/events--1/"+first, seg)
	logdir("checkpoint-beyond-end", map[string][]byte{first: seg},
		map[string]string{"log-start-offset-checkpoint": "0\n1\nevents 0 999\n", "replication-offset-checkpoint": "0\n1\nevents 0 -5\n"})

	// Snapshots: a whole bundle of the seed-shaped app, then broken copies.
	base := baseSnapshot(t)
	snap := func(name string, edit func(files map[string][]byte)) {
		c := map[string][]byte{}
		for p, b := range base {
			c[p] = bytes.Clone(b)
		}
		if edit != nil {
			edit(c)
		}
		for p, b := range c {
			add("snapshot/"+name+"/"+p, b)
		}
	}
	aLog := "orders-v1-1/" + segment.SegmentName(0)
	if base[aLog] == nil {
		t.Fatalf("base snapshot has no %s", aLog)
	}
	snap("base", nil)
	snap("hash-mismatch", func(f map[string][]byte) {
		f[snapshot.ManifestFile] = editManifest(t, f[snapshot.ManifestFile], func(m *snapshot.Manifest) {
			for i := range m.Files {
				if m.Files[i].Path == aLog {
					m.Files[i].SHA256 = strings.Repeat("ab", 32)
				}
			}
		})
	})
	snap("log-altered", func(f map[string][]byte) { f[aLog] = corrupt(f[aLog], 70) })
	snap("missing-file", func(f map[string][]byte) { delete(f, aLog) })
	snap("unlisted-file", func(f map[string][]byte) { f["orders-v1-0/"+segment.SegmentName(1000)] = f[aLog] })
	snap("manifest-not-json", func(f map[string][]byte) { f[snapshot.ManifestFile] = []byte("app_id: shop\nthis is not JSON\n") })
	snap("manifest-truncated", func(f map[string][]byte) {
		f[snapshot.ManifestFile] = f[snapshot.ManifestFile][:len(f[snapshot.ManifestFile])/2]
	})
	snap("manifest-empty", func(f map[string][]byte) { f[snapshot.ManifestFile] = nil })
	snap("no-manifest", func(f map[string][]byte) { delete(f, snapshot.ManifestFile) })
	snap("manifest-future-format", func(f map[string][]byte) {
		f[snapshot.ManifestFile] = editManifest(t, f[snapshot.ManifestFile], func(m *snapshot.Manifest) { m.Format = 99 })
	})
	snap("manifest-wrong-types", func(f map[string][]byte) {
		f[snapshot.ManifestFile] = bytes.Replace(f[snapshot.ManifestFile], []byte(`"partitions": [`), []byte(`"partitions": "many", "x": [`), 1)
	})
	snap("path-outside", func(f map[string][]byte) {
		f[snapshot.ManifestFile] = editManifest(t, f[snapshot.ManifestFile], func(m *snapshot.Manifest) {
			m.Files = append(m.Files, snapshot.File{Path: "../../README.md", Size: 1, SHA256: strings.Repeat("00", 32)})
		})
	})
	snap("offsets-inconsistent", func(f map[string][]byte) {
		f[snapshot.ManifestFile] = editManifest(t, f[snapshot.ManifestFile], func(m *snapshot.Manifest) {
			for i := range m.Partitions {
				if m.Partitions[i].Topic == "orders-v1" && m.Partitions[i].Partition == 1 {
					m.Partitions[i].LogStart, m.Partitions[i].HW = 50, 3
				}
			}
		})
	})
	snap("partition-huge", func(f map[string][]byte) {
		f[snapshot.ManifestFile] = editManifest(t, f[snapshot.ManifestFile], func(m *snapshot.Manifest) {
			m.Partitions = append(m.Partitions, snapshot.PartitionState{Topic: "orders-v1", Partition: 2147483647, HW: 5, Next: 5, Complete: true})
		})
	})
	snap("partition-negative", func(f map[string][]byte) {
		f[snapshot.ManifestFile] = editManifest(t, f[snapshot.ManifestFile], func(m *snapshot.Manifest) {
			m.Partitions = append(m.Partitions, snapshot.PartitionState{Topic: "orders-v1", Partition: -1, HW: 5, Next: 5, Complete: true})
		})
	})
	snap("offsets-negative", func(f map[string][]byte) {
		f[snapshot.ManifestFile] = editManifest(t, f[snapshot.ManifestFile], func(m *snapshot.Manifest) {
			for i := range m.Partitions {
				if m.Partitions[i].Topic == "orders-v1" && m.Partitions[i].Partition == 1 {
					m.Partitions[i].LogStart, m.Partitions[i].LSO, m.Partitions[i].HW = -7, -3, -1
				}
			}
		})
	})
	snap("schema-garbage", func(f map[string][]byte) {
		f[snapshot.ManifestFile] = editManifest(t, f[snapshot.ManifestFile], func(m *snapshot.Manifest) {
			m.Schemas = map[int32]audit.Schema{1: {Schema: "this is not an Avro schema"}, -5: {Schema: `{"type":`}}
		})
	})
	snap("with-schemas", func(f map[string][]byte) {
		f[snapshot.ManifestFile] = editManifest(t, f[snapshot.ManifestFile], func(m *snapshot.Manifest) {
			m.Schemas = map[int32]audit.Schema{1: {Schema: fakeapp.EventSchema}}
		})
	})
	snap("file-dropped", func(f map[string][]byte) {
		delete(f, aLog)
		f[snapshot.ManifestFile] = editManifest(t, f[snapshot.ManifestFile], func(m *snapshot.Manifest) {
			m.Files = slices.DeleteFunc(m.Files, func(x snapshot.File) bool { return x.Path == aLog })
		})
	})
	snap("group-garbage", func(f map[string][]byte) {
		f[snapshot.ManifestFile] = editManifest(t, f[snapshot.ManifestFile], func(m *snapshot.Manifest) {
			if m.Group == nil {
				t.Fatal("base snapshot has no group")
			}
			m.Group.Offsets = append(m.Group.Offsets, snapshot.GroupOffset{Topic: "orders-v1", Partition: 1, Offset: 1 << 62},
				snapshot.GroupOffset{Topic: "no-such-topic", Partition: 7, Offset: -42})
		})
	})
	// A bad CRC the manifest agrees with: only the segment reader can tell.
	snap("crc-rehashed", func(f map[string][]byte) {
		f[aLog] = corrupt(f[aLog], 70)
		f[snapshot.ManifestFile] = rehash(t, f[snapshot.ManifestFile], aLog, f[aLog])
	})
	snap("truncated-rehashed", func(f map[string][]byte) {
		f[aLog] = f[aLog][:len(f[aLog])/2]
		f[snapshot.ManifestFile] = rehash(t, f[snapshot.ManifestFile], aLog, f[aLog])
	})

	// Streams state dirs for diff --state-dir over the base snapshot.
	cl := func(store string, p int32) audit.TopicPartition {
		return audit.TopicPartition{Topic: "shop-KSTREAM-REDUCE-STATE-STORE-" + store + "-changelog", Partition: p}
	}
	goodCkpt := statedir.FormatCheckpoint(map[audit.TopicPartition]int64{cl("0000000002", 1): 10, cl("0000000009", 1): 8})
	stateDir := func(name string, files map[string][]byte) {
		for p, b := range files {
			add("statedir/"+name+"/shop/"+p, b)
		}
	}
	meta := []byte(`{"processId":"3e1c2a0c-0a5e-4c8a-9d7e-2f2b5c0e7a11"}`)
	stateDir("good", map[string][]byte{"kafka-streams-process-metadata": meta, "1_1/" + statedir.CheckpointFile: goodCkpt})
	stateDir("checkpoint-ahead", map[string][]byte{"1_1/" + statedir.CheckpointFile: statedir.FormatCheckpoint(map[audit.TopicPartition]int64{cl("0000000002", 1): 1_000_000})})
	stateDir("checkpoint-garbage", map[string][]byte{"1_1/" + statedir.CheckpointFile: garbage[:64]})
	stateDir("checkpoint-truncated", map[string][]byte{"1_1/" + statedir.CheckpointFile: goodCkpt[:len(goodCkpt)-9]})
	stateDir("checkpoint-count-lies", map[string][]byte{"1_1/" + statedir.CheckpointFile: []byte("0\n1000000000\nshop-KSTREAM-REDUCE-STATE-STORE-0000000002-changelog 1 20\n")})
	stateDir("checkpoint-version", map[string][]byte{"1_1/" + statedir.CheckpointFile: bytes.Replace(goodCkpt, []byte("0\n"), []byte("9\n"), 1)})
	stateDir("checkpoint-negative", map[string][]byte{"1_1/" + statedir.CheckpointFile: []byte("0\n1\nshop-KSTREAM-REDUCE-STATE-STORE-0000000002-changelog 1 -123\n")})
	stateDir("metadata-garbage", map[string][]byte{"kafka-streams-process-metadata": []byte("{{{"), "1_1/" + statedir.CheckpointFile: goodCkpt})

	// Topology#describe() texts that do not parse.
	good, err := demoFiles.ReadFile("demo/topology.txt")
	if err != nil {
		t.Fatal(err)
	}
	addText("topology/empty.txt", "")
	addText("topology/garbage.txt", "this is not a topology\n\x00\x01\x02\n")
	addText("topology/truncated.txt", string(good[:len(good)/3]))
	addText("topology/binary.txt", string(garbage[:512]))
	addText("topology/dangling.txt", "Topologies:\n   Sub-topology: 0\n    Source: S (topics: [orders-v1])\n      --> NOWHERE\n")
	addText("topology/bad-header.txt", strings.Replace(string(good), "Sub-topology: 1", "Sub-topology: one", 1))
	addText("topology/cycle.txt", "Topologies:\n   Sub-topology: 0\n    Source: S (topics: [orders-v1])\n      --> A\n"+
		"    Processor: A (stores: [])\n      --> B\n      <-- S, B\n    Processor: B (stores: [])\n      --> A\n      <-- A\n")
	addText("topology/self-loop.txt", "Topologies:\n   Sub-topology: 0\n    Source: S (topics: [orders-v1])\n      --> S\n      <-- S\n")
	addText("topology/unclosed-bracket.txt", strings.Replace(string(good), "(topics: [orders-v1])", "(topics: [orders-v1", 1))

	// Specs (kaudit.yaml) that must be refused, each with the good
	// topology beside it.
	specOK := strings.Replace(safetyJSONSpec, "topology: topology.txt", "topology: ../topology-good.txt", 1)
	addText("spec/topology-good.txt", string(good))
	addText("spec/good/kaudit.yaml", specOK)
	badSpecs := map[string]string{
		"misspelt-field":    strings.Replace(specOK, "select_key: value.orderId, reduce: latest}\n  - {name: payments", "select_kye: value.orderId, reduce: latest}\n  - {name: payments", 1),
		"bad-expression":    strings.Replace(specOK, "select_key: value.orderId, reduce: latest}\n  - {name: payments", "select_key: 'value.orderId +', reduce: latest}\n  - {name: payments", 1),
		"bad-reducer-expr":  strings.Replace(specOK, "reduce: latest}\n  - {name: payments", "reduce: {expr: 'agg +* value'}}\n  - {name: payments", 1),
		"bad-join-value":    specOK + "    value: '{\"a\": left.orderId,'\n",
		"wrong-type":        strings.Replace(specOK, "tables:\n", "tables: 5\nx:\n", 1),
		"wrong-type-list":   strings.Replace(specOK, "right: [payments, shipments]", "right: {payments: 1}", 1),
		"unknown-reducer":   strings.Replace(specOK, "reduce: latest}\n  - {name: payments", "reduce: median}\n  - {name: payments", 1),
		"unknown-serde":     strings.Replace(specOK, "value: json}", "value: protobuf-ish}", 1),
		"unknown-table":     strings.Replace(specOK, "left: orders", "left: ordres", 1),
		"unknown-join-type": strings.Replace(specOK, "type: left", "type: sideways", 1),
		"yaml-syntax":       strings.Replace(specOK, "tables:\n", "tables: [\n", 1),
		"tabs":              strings.Replace(specOK, "  - {name: orders", "\t- {name: orders", 1),
		"empty":             "",
		"no-tables":         "app_id: shop\nserdes: {key: string, value: json}\n",
		"duplicate-table":   strings.Replace(specOK, "name: payments,", "name: orders,", 1),
		"missing-topology":  strings.Replace(specOK, "../topology-good.txt", "nonexistent.txt", 1),
		"bad-topology":      strings.Replace(specOK, "../topology-good.txt", "../../topology/garbage.txt", 1),
		"alias-bomb":        aliasBomb() + specOK,
		"select-key-typo":   strings.Replace(specOK, "select_key: value.orderId, reduce: latest}\n  - {name: payments", "select_key: value.orderID, reduce: latest}\n  - {name: payments", 1),
		"alias-bomb-used":   aliasBombUsed(specOK),
		"utf16":             utf16(specOK),
	}
	for name, text := range badSpecs {
		if text == specOK && name != "good" {
			t.Fatalf("spec %s: the edit did not apply", name)
		}
		addText("spec/"+name+"/kaudit.yaml", text)
	}

	// JSON reports for kaudit merge and diff --baseline: a real one of
	// the base snapshot (clean), and broken or lying copies.
	clean := cleanReport(t, files)
	edit := func(name string, change func(map[string]any)) {
		var m map[string]any
		if err := json.Unmarshal(clean, &m); err != nil {
			t.Fatal(err)
		}
		change(m)
		b, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		add("reports/"+name+".json", append(b, '\n'))
	}
	loss := map[string]any{"stage": "source", "cause": "retention-gap", "severity": "loss", "topic": "orders-v1", "partition": 1, "offset": 3,
		"count": 2, "key": nil, "timestamp": nil, "transactional_id": "", "producer_id": nil, "producer_epoch": nil, "expected": nil, "actual": nil, "detail": "planted"}
	add("reports/clean.json", clean)
	addText("reports/not-json.json", "verdict: clean\n")
	add("reports/truncated.json", clean[:len(clean)/2])
	addText("reports/empty.json", "")
	addText("reports/null.json", "null\n")
	edit("verdict-lies", func(m map[string]any) { m["findings"] = []any{loss} })
	edit("other-app", func(m map[string]any) { m["app_id"] = "other-app" })
	edit("wrong-types", func(m map[string]any) { m["findings"] = "none"; m["cut"] = 7 })
	edit("unknown-cause", func(m map[string]any) {
		f := maps.Clone(loss)
		f["cause"], f["severity"], f["stage"] = "gremlins", "catastrophic", "moon"
		m["findings"] = []any{f}
	})
	edit("huge-count", func(m map[string]any) {
		f := maps.Clone(loss)
		f["count"], f["offset"], f["partition"] = 9.2e18, -9.2e18, 2147483647
		m["findings"] = []any{f, f}
	})

	// Schemas for --schemas: not JSON, and a schema that is not the one
	// the bytes were written with.
	addText("schemas/not-json/1.avsc", "{\"type\": \"record\", \"name\": ")
	addText("schemas/wrong-schema/1.avsc", `{"type":"record","name":"Other","fields":[{"name":"x","type":"double"},{"name":"y","type":{"type":"array","items":"long"}}]}`)
	addText("schemas/wrong-schema/2.avsc", `{"type":"fixed","name":"F","size":3}`)
	return files
}

// cleanReport is kaudit diff's JSON report of the corpus's base snapshot
// with the good spec, its generation time pinned.
func cleanReport(t *testing.T, files []corpusFile) []byte {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		if rel, ok := strings.CutPrefix(f.path, "snapshot/base/"); ok {
			p := filepath.Join(dir, "snap", filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, f.data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if rel, ok := strings.CutPrefix(f.path, "spec/"); ok && (rel == "good/kaudit.yaml" || rel == "topology-good.txt") {
			p := filepath.Join(dir, "spec", filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, f.data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	out, errOut, code := runCLI(t, "diff", "--snapshot", filepath.Join(dir, "snap"), "--spec", filepath.Join(dir, "spec", "good", "kaudit.yaml"), "--format", "json")
	if code != exitClean {
		t.Fatalf("the base snapshot's audit: exit %d, stderr %s", code, errOut)
	}
	b := regexp.MustCompile(`"generated_at": "[^"]*"`).ReplaceAll([]byte(out), []byte(`"generated_at": "`+corpusTime.Format(time.RFC3339)+`"`))
	return bytes.ReplaceAll(b, []byte(filepath.Join(dir, "snap")), []byte("testdata/bad/snapshot/base"))
}

// aliasBomb is a YAML document prefix whose aliases expand to about 10^7
// nodes ("billion laughs"), bound to a key the spec does not know.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("x-bomb:\n  a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 7; i++ {
		fmt.Fprintf(&b, "  a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	return b.String()
}

// aliasBombUsed puts the bomb where the decoder must read it: a table's
// store name is an alias of the largest node.
func aliasBombUsed(spec string) string {
	bomb := strings.ReplaceAll(aliasBomb(), "\n  a", "\n    a")
	bomb = strings.Replace(bomb, "x-bomb:\n", "  - name: bomb\n    source: orders-v1\n    select_key: value.orderId\n    reduce: latest\n    changelog:\n", 1)
	spec = strings.Replace(spec, "tables:\n", "tables:\n"+bomb, 1)
	return strings.Replace(spec, "{name: orders,", "{store: *a6, name: orders,", 1)
}

// utf16 encodes s as UTF-16LE with a byte-order mark, as some editors
// save YAML.
func utf16(s string) string {
	b := []byte{0xff, 0xfe}
	for _, r := range s {
		b = append(b, byte(r), byte(r>>8))
	}
	return string(b)
}

// eventsSegment writes offsets [from, to) of topic events as batches of
// two plain records and returns the .log bytes.
func eventsSegment(t *testing.T, from, to int64) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), segment.SegmentName(from))
	w, err := segment.CreateSegment(path)
	if err != nil {
		t.Fatal(err)
	}
	ts := corpusTime.UnixMilli()
	for o := from; o < to; o++ {
		base := o - o%2
		r := audit.Record{Topic: "events", Offset: o, Key: fmt.Appendf(nil, "k%d", o), Value: fmt.Appendf(nil, `{"n":%d}`, o), Timestamp: ts + o,
			Batch: audit.Batch{BaseOffset: base, LastOffsetDelta: 1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, MaxTimestamp: ts + base + 1, Compression: "none"}}
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// splitBatches cuts a .log into its batches by their length fields.
func splitBatches(t *testing.T, b []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for len(b) >= 12 {
		n := 12 + int(binary.BigEndian.Uint32(b[8:12]))
		if n > len(b) {
			t.Fatalf("batch of %d bytes in %d", n, len(b))
		}
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

func corrupt(b []byte, at int) []byte {
	c := bytes.Clone(b)
	c[at] ^= 0x5a
	return c
}

func setByte(b []byte, at int, v byte) []byte {
	c := bytes.Clone(b)
	c[at] = v
	return c
}

func setUint32(b []byte, at int, v uint32) []byte {
	c := bytes.Clone(b)
	binary.BigEndian.PutUint32(c[at:], v)
	return c
}

// setUint64 rewrites a batch's base offset, which its CRC does not cover:
// the batch is well formed, its place in the log is not.
func setUint64(b []byte, at int, v uint64) []byte {
	c := bytes.Clone(b)
	binary.BigEndian.PutUint64(c[at:], v)
	return c
}

// baseSnapshot captures the seed-shaped app (no faults, no lag) from an
// in-memory source and returns the bundle's files by relative path.
func baseSnapshot(t *testing.T) map[string][]byte {
	t.Helper()
	m := fakeapp.NewMemory(corpusTime)
	s := fakeapp.SeedScenario("shop", 24)
	s.Now = corpusTime.UnixMilli()
	s.Lag, s.Inflight = 0, 0
	if _, err := fakeapp.Generate(s, fakeapp.NewMemoryBackend(m)); err != nil {
		t.Fatal(err)
	}
	topo, err := demoFiles.ReadFile("demo/topology.txt")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The output topic is named: capture takes only the group's topics
	// and the app's internal ones by default.
	topics := []string{s.Output}
	for _, tb := range s.Tables {
		topics = append(topics, tb.Source, s.Repartition(tb), s.Changelog(tb))
	}
	if _, err := snapshot.Capture(t.Context(), m, snapshot.CaptureOptions{Dir: dir, AppID: "shop", Topology: string(topo), Topics: topics}); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Capture stamps its own run times: pin them so the corpus is stable.
	files[snapshot.ManifestFile] = editManifest(t, files[snapshot.ManifestFile], func(m *snapshot.Manifest) {
		m.CapturedAt, m.UpdatedAt = corpusTime, corpusTime
	})
	return files
}

func editManifest(t *testing.T, b []byte, edit func(*snapshot.Manifest)) []byte {
	t.Helper()
	var m snapshot.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(&m)
	out, err := json.MarshalIndent(&m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

func rehash(t *testing.T, manifest []byte, path string, data []byte) []byte {
	t.Helper()
	return editManifest(t, manifest, func(m *snapshot.Manifest) {
		for i := range m.Files {
			if m.Files[i].Path == path {
				m.Files[i].Size, m.Files[i].SHA256 = int64(len(data)), sha256Hex(data)
			}
		}
	})
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestBadCorpus checks that testdata/bad holds exactly what the generator
// writes (-regen-bad rewrites it).
func TestBadCorpus(t *testing.T) {
	files := buildCorpus(t)
	if *regenBad || golden.Updating() {
		for _, sub := range []string{"logdir", "snapshot", "topology", "spec", "schemas", "reports", "statedir"} {
			if err := os.RemoveAll(filepath.Join(badDir, sub)); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range files {
			p := filepath.Join(badDir, filepath.FromSlash(f.path))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, f.data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	for _, f := range files {
		got, err := os.ReadFile(filepath.Join(badDir, filepath.FromSlash(f.path)))
		if err != nil {
			t.Errorf("%s (run with -regen-bad): %v", f.path, err)
			continue
		}
		if !bytes.Equal(got, f.data) {
			t.Errorf("%s differs from what the generator writes (run with -regen-bad)", f.path)
		}
	}
}
