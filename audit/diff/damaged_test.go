package diff

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/draft"
	"github.com/kaudit/kaudit/audit/snapshot"
)

// copyBundle copies a capture bundle into a temp dir.
func copyBundle(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "bundle")
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// editManifest rewrites a bundle's manifest; with agree, every listed
// file's size and sha256 and every partition's bytes are then made to
// match the files, as a careful editor of the bundle would.
func editManifest(t *testing.T, dir string, agree bool, edit func(m *snapshot.Manifest)) {
	t.Helper()
	m, err := snapshot.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(m)
	}
	if agree {
		bytesOf := map[string]int64{}
		m.Files = slices.DeleteFunc(m.Files, func(f snapshot.File) bool {
			_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f.Path)))
			return err != nil
		})
		for i, f := range m.Files {
			b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(b)
			m.Files[i].Size, m.Files[i].SHA256 = int64(len(b)), hex.EncodeToString(sum[:])
			d, _, _ := strings.Cut(f.Path, "/")
			bytesOf[d] += int64(len(b))
		}
		parts := make([]*snapshot.PartitionState, 0, len(m.Partitions)+1)
		for i := range m.Partitions {
			parts = append(parts, &m.Partitions[i])
		}
		if m.CommitLog != nil {
			parts = append(parts, &m.CommitLog.PartitionState)
		}
		for _, p := range parts {
			p.Bytes = bytesOf[fmt.Sprintf("%s-%d", p.Topic, p.Partition)]
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, snapshot.ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// batchStarts are where a segment's batches start.
func batchStarts(b []byte) []int {
	var at []int
	for p := 0; p+61 <= len(b); p += 12 + int(int32(binary.BigEndian.Uint32(b[p+8:]))) {
		at = append(at, p)
	}
	return at
}

// damage is one way to break a bundle's segment file; asIs: also with
// the manifest left as it was (not only made to agree with the files).
type damage struct {
	name  string
	apply func(t *testing.T, dir, rel string)
	asIs  bool
}

// rewriteSegment is a damage that changes a segment's bytes.
func rewriteSegment(name string, f func(b []byte, starts []int) []byte) damage {
	return damage{name: name, apply: func(t *testing.T, dir, rel string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f(b, batchStarts(b)), 0o644); err != nil {
			t.Fatal(err)
		}
	}}
}

// damages break one segment of a bundle as issue AF's damaged bundles do
// (testdata/probe/damaged.go makes all of them for the probe).
var damages = []damage{
	rewriteSegment("cut inside the middle batch", func(b []byte, at []int) []byte { return b[:at[len(at)/2]+30] }),
	rewriteSegment("the last batch gone", func(b []byte, at []int) []byte { return b[:at[len(at)-1]] }),
	rewriteSegment("emptied", func([]byte, []int) []byte { return nil }),
	rewriteSegment("a CRC-covered byte of the middle batch", func(b []byte, at []int) []byte { b[at[len(at)/2]+40] ^= 0x5a; return b }),
	rewriteSegment("the first batch's CRC", func(b []byte, _ []int) []byte { b[17] ^= 0xff; return b }),
	{name: "removed", asIs: true, apply: func(t *testing.T, dir, rel string) {
		if err := os.Remove(filepath.Join(dir, filepath.FromSlash(rel))); err != nil {
			t.Fatal(err)
		}
	}},
	{name: "listed twice", apply: func(t *testing.T, dir, rel string) {
		editManifest(t, dir, false, func(m *snapshot.Manifest) {
			i := slices.IndexFunc(m.Files, func(f snapshot.File) bool { return f.Path == rel })
			m.Files = slices.Insert(m.Files, i+1, m.Files[i])
		})
	}},
	{name: "copied as a later segment, listed", apply: func(t *testing.T, dir, rel string) {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		cp := path.Join(path.Dir(rel), "00000000000000000001.log")
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(cp)), b, 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		editManifest(t, dir, false, func(m *snapshot.Manifest) {
			m.Files = append(m.Files, snapshot.File{Path: cp, Size: int64(len(b)), SHA256: hex.EncodeToString(sum[:])})
		})
	}},
}

// damageNamed is the damage of that name.
func damageNamed(t *testing.T, name string) damage {
	t.Helper()
	i := slices.IndexFunc(damages, func(d damage) bool { return d.name == name })
	if i < 0 {
		t.Fatalf("no damage %q", name)
	}
	return damages[i]
}

// TestInferredOnDamagedBundles (issue AF, items 2 and 10): kaudit init's
// draft and diff --app-id alone (the spec inferred from the evidence) on
// Kafka's WordCountDemo bundle (no topology: the draft looks for the
// table's output itself; a commit history) with one segment of one
// partition broken, the manifest made to agree with the files (only the
// batches and the offsets and record counts the capture wrote can tell):
// the draft never panics (it did, on 81 of 180 such bundles) and
// names what it could not read; the audit is never clean (it was on 24)
// and never a loss or anomaly (the bundle is clean): it is incomplete,
// naming the damaged partition.
func TestInferredOnDamagedBundles(t *testing.T) {
	const fixture, appID = "../../testdata/apps/wordcount", "streams-wordcount"
	m, err := snapshot.ReadManifest(fixture)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range m.Files {
		tp := path.Dir(f.Path)
		for _, d := range damages {
			for _, agree := range []bool{true, false} {
				if !agree && !d.asIs {
					continue
				}
				name := tp + "/" + d.name
				if !agree {
					name += ", manifest as it was"
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					dir := copyBundle(t, fixture)
					d.apply(t, dir, f.Path)
					if agree {
						editManifest(t, dir, true, nil)
					}
					ev, err := OpenSnapshot(t.Context(), dir)
					if err != nil {
						t.Fatal(err)
					}
					var out strings.Builder
					if err := draft.Write(t.Context(), &out, ev.Source, draft.Options{AppID: appID}); err != nil {
						t.Fatalf("draft: %v", err)
					}
					rep, err := Diff(t.Context(), ev, Options{AppID: appID})
					if err != nil {
						t.Fatalf("diff: %v", err)
					}
					named := false
					for _, f := range rep.Findings {
						if f.Severity == audit.SeverityLoss || f.Severity == audit.SeverityAnomaly && f.Cause != audit.CauseUnreadable {
							t.Errorf("finding %s/%s %s/%d@%d: %s", f.Stage, f.Cause, f.Topic, f.Partition, f.Offset, f.Detail)
						}
						named = named || f.Cause == audit.CauseUnreadable && fmt.Sprintf("%s-%d", f.Topic, f.Partition) == tp
					}
					if rep.Summary.Verdict != audit.VerdictIncomplete || !named {
						t.Fatalf("verdict %s, the damaged partition named: %v; want incomplete, named (missing %q)", rep.Summary.Verdict, named, rep.Summary.Missing)
					}
				})
			}
		}
	}
}

// auditBundle audits a bundle, with a spec or without (the spec inferred).
func auditBundle(t *testing.T, dir, appID, specFile string) *audit.Report {
	t.Helper()
	ev, err := OpenSnapshot(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Diff(t.Context(), ev, Options{AppID: appID, SpecFile: specFile})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// routesChangelog is the count store's changelog of the drill's routes
// app: Longs, where the app's other values are JSON.
const routesChangelog = "kaudit-steps-routes-KSTREAM-AGGREGATE-STATE-STORE-0000000006-changelog"

// TestUndecodableOrDamage (issue AF, item 8): which records that do not
// decode are the producer's (undecodable, an anomaly) and which are
// damage (missing evidence), on the drill's routes app, whose count store
// writes Longs beside JSON values. A record in a batch whose CRC fails is
// never decoded: its partition is unreadable. A whole record the user's
// serde cannot decode is undecodable, damage elsewhere or not. Without
// --spec, a changelog partition damaged kept the draft from seeing the
// store's Longs: the other partition's 35 whole records, read as JSON,
// were 35 undecodable anomalies (exit 1); they are missing evidence,
// since which serde they were written with rests on what could not be
// read.
func TestUndecodableOrDamage(t *testing.T) {
	const fixture, appID = "../../testdata/apps/routes", "kaudit-steps-routes"
	spec, err := os.ReadFile("../../testdata/apps/routes.kaudit.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(spec), "\n") {
		if !strings.Contains(l, "store_serdes") {
			lines = append(lines, l) // the count store's Longs read as the app's JSON
		}
	}
	noSerde := filepath.Join(t.TempDir(), "kaudit.yaml")
	if err := os.WriteFile(noSerde, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	seg := func(p int) string { return fmt.Sprintf("%s-%d/00000000000000000000.log", routesChangelog, p) }
	for _, tc := range []struct {
		name        string
		spec        string
		damage      func(t *testing.T, dir string)
		undecodable map[int32]int // per partition of the changelog
		missing     string        // a missing-evidence entry holds it; "" for none
		verdict     audit.Verdict
	}{
		{name: "no spec, whole", verdict: audit.VerdictClean},
		{name: "no spec, the changelog's partition 0 removed", damage: func(t *testing.T, dir string) {
			damageNamed(t, "removed").apply(t, dir, seg(0))
		}, missing: "35 records of " + routesChangelog + " do not decode with the serdes inferred", verdict: audit.VerdictIncomplete},
		{name: "no spec, a batch of partition 0 corrupt, manifest agreeing", damage: func(t *testing.T, dir string) {
			damageNamed(t, "a CRC-covered byte of the middle batch").apply(t, dir, seg(0))
			editManifest(t, dir, true, nil)
		}, missing: "35 records of " + routesChangelog + " do not decode with the serdes inferred", verdict: audit.VerdictIncomplete},
		{name: "the user's serde, whole", spec: noSerde, undecodable: map[int32]int{0: 15, 1: 35}},
		{name: "the user's serde, a batch of partition 1 corrupt, manifest agreeing", spec: noSerde, damage: func(t *testing.T, dir string) {
			damageNamed(t, "a CRC-covered byte of the middle batch").apply(t, dir, seg(1))
			editManifest(t, dir, true, nil)
		}, undecodable: map[int32]int{0: 15}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyBundle(t, fixture)
			if tc.damage != nil {
				tc.damage(t, dir)
			}
			rep := auditBundle(t, dir, appID, tc.spec)
			got, want := map[int32]int{}, tc.undecodable
			for _, f := range rep.Findings {
				if f.Cause == audit.CauseUndecodable {
					if f.Topic != routesChangelog {
						t.Errorf("undecodable %s/%d@%d: %s", f.Topic, f.Partition, f.Offset, f.Detail)
					}
					got[f.Partition]++
				}
			}
			if !maps.Equal(got, want) {
				t.Errorf("undecodable records per partition %v, want %v", got, want)
			}
			if tc.missing != "" && !slices.ContainsFunc(rep.Summary.Missing, func(m string) bool { return strings.Contains(m, tc.missing) }) {
				t.Errorf("missing evidence %q, want one saying %q", rep.Summary.Missing, tc.missing)
			}
			if tc.verdict != "" && rep.Summary.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s", rep.Summary.Verdict, tc.verdict)
			}
		})
	}
}

// TestUndecodableOfGuess: with an inferred spec, undecodable findings
// turn into missing evidence (one entry per topic), naming what could not
// be read where something could not.
func TestUndecodableOfGuess(t *testing.T) {
	undecodable := func(topic string, p int32) audit.Finding {
		f := audit.NewFinding(audit.StageSource, audit.CauseUndecodable, audit.TopicPartition{Topic: topic, Partition: p}, 7)
		f.Detail = "value: not JSON"
		return f
	}
	unreadable := audit.UnreadablePartition(audit.TopicPartition{Topic: "cl", Partition: 0}, "cl-0/00000000000000000000.log is missing")
	for _, tc := range []struct {
		name     string
		findings []audit.Finding
		kept     int
		missing  []string
		damage   bool // the entries name cl/0, unreadable
	}{
		{"nothing unreadable", []audit.Finding{undecodable("cl", 1), undecodable("cl", 1)}, 0, []string{"2 records of cl do not decode"}, false},
		{"a partition unreadable", []audit.Finding{unreadable, undecodable("cl", 1), undecodable("cl", 1), undecodable("out", 0)}, 1,
			[]string{"2 records of cl do not decode", "1 records of out do not decode"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := &audit.Report{Findings: slices.Clone(tc.findings)}
			undecodableOfGuess(rep)
			if len(rep.Findings) != tc.kept || len(rep.Summary.Missing) != len(tc.missing) {
				t.Fatalf("%d findings, missing %q; want %d findings, %d entries", len(rep.Findings), rep.Summary.Missing, tc.kept, len(tc.missing))
			}
			for i, m := range tc.missing {
				if !strings.HasPrefix(rep.Summary.Missing[i], m) || strings.Contains(rep.Summary.Missing[i], "cl/0") != tc.damage {
					t.Errorf("missing %q, want it to start %q and name cl/0: %v", rep.Summary.Missing[i], m, tc.damage)
				}
			}
		})
	}
}

// TestCutCommitMarker (issue AF, item 10): the incident bundle with the
// last batch of a changelog partition, its last transaction's COMMIT
// marker, gone and the manifest made to agree with the files. The
// changelog is compacted, so its log may end early: read as it was, the
// transaction's data below the LSO without a marker was Kafka's
// transaction-inconsistent (an anomaly beside the 6 losses, exit 1). The
// capture cut it, not Kafka: the records the manifest says the capture
// copied are not there, the partition is unreadable, not captured.
func TestCutCommitMarker(t *testing.T) {
	const cl = "kaudit-drill-KSTREAM-REDUCE-STATE-STORE-0000000003-changelog"
	dir := copyBundle(t, "../../testdata/incidents/dropped")
	damageNamed(t, "the last batch gone").apply(t, dir, cl+"-0/00000000000000000000.log")
	editManifest(t, dir, true, nil)
	rep := auditBundle(t, dir, "", "../../testdata/incidents/dropped.kaudit.yaml")
	named := false
	for _, f := range rep.Findings {
		if f.Cause == audit.CauseTransactionInconsistent {
			t.Errorf("%s %s/%d@%d: %s", f.Cause, f.Topic, f.Partition, f.Offset, f.Detail)
		}
		named = named || f.Cause == audit.CauseUnreadable && f.Topic == cl && f.Partition == 0 && strings.Contains(f.Detail, "not captured")
	}
	if !named {
		t.Errorf("no unreadable finding says %s/0 was not captured: %+v", cl, rep.Findings)
	}
}
