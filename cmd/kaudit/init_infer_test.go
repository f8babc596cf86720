package main

import (
	"context"
	"fmt"
	"iter"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit/spec"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/snapshot"
	"github.com/kaudit/kaudit/internal/fakeapp"
	"github.com/kaudit/kaudit/internal/fakeregistry"
)

// specShape is what a spec says of an app, by source topic: what
// inference must recover. Names and store overrides are left out.
func specShape(t *testing.T, name string, text []byte) []string {
	t.Helper()
	s, err := spec.ParseSpec(name, text)
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, text)
	}
	source := map[string]string{}
	out := []string{fmt.Sprintf("serdes %s/%s", s.Serdes.Key, s.Serdes.Value)}
	for _, tb := range s.Tables {
		source[tb.Name] = tb.Source
		out = append(out, fmt.Sprintf("table %s: select_key %q reduce %s", tb.Source, tb.SelectKeyExpr, tb.Reducer.String()))
	}
	for _, j := range s.Joins {
		var rights []string
		for _, r := range j.Right {
			rights = append(rights, source[r])
		}
		out = append(out, fmt.Sprintf("join %s: %s ⋈ %v %s: %s", j.Output, source[j.Left], rights, j.Type, j.Value))
	}
	return out
}

func sameShape(t *testing.T, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("drafted spec:\n  %s\nwant the hand-written:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestInitInfersTheBundle: from the incident bundle alone (real Kafka
// Streams 3.6.2 data; no spec, no --topology), kaudit init drafts exactly
// the hand-written spec, and diff with the draft finds what diff with
// the hand-written spec finds.
func TestInitInfersTheBundle(t *testing.T) {
	out, errOut, code := runCLI(t, "init", "--app-id", "kaudit-drill", "--snapshot", "../../testdata/incidents/dropped")
	if code != exitClean {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	checkGolden(t, "init-dropped.yaml", []byte(out))
	want, err := os.ReadFile("../../testdata/incidents/dropped.kaudit.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sameShape(t, specShape(t, "drafted", []byte(out)), specShape(t, "hand-written", want))

	drafted := filepath.Join(t.TempDir(), "kaudit.yaml")
	if err := os.WriteFile(drafted, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, want := bundleFindings(t, drafted), bundleFindings(t, "../../testdata/incidents/dropped.kaudit.yaml"); !slices.Equal(got, want) {
		t.Errorf("diff with the drafted spec finds\n%v\nwith the hand-written\n%v", got, want)
	}
}

// bundleFindings are the findings of diff on the incident bundle with a spec.
func bundleFindings(t *testing.T, sp string) []string {
	t.Helper()
	out, errOut, code := runCLI(t, "diff", "--snapshot", "../../testdata/incidents/dropped", "--spec", sp, "--format", "json")
	if code != exitFindings {
		t.Fatalf("diff --spec %s: exit %d: %s", sp, code, errOut)
	}
	var rep audit.Report
	if err := decodeReport([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	var fs []string
	for _, f := range rep.Findings {
		fs = append(fs, fmt.Sprintf("%s %s %s/%d@%d %s", f.Stage, f.Cause, f.Topic, f.Partition, f.Offset, f.Key))
	}
	return fs
}

// TestInitInfersTheDemo: from the demo's cluster (with its seven faults)
// and its describe() text, kaudit init drafts exactly the demo's
// hand-written spec.
func TestInitInfersTheDemo(t *testing.T) {
	reg := fakeregistry.New()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: reg, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // closed below
	defer srv.Close()
	enc, err := fakeapp.NewAvroEncoder(reg)
	if err != nil {
		t.Fatal(err)
	}
	s := demoScenario(600)
	s.Now = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC).UnixMilli()
	s.Encode = enc.Encode
	cluster, _, err := fakeapp.WriteFake(t.Context(), s, loopback())
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	regURL := "http://" + ln.Addr().String()
	out, errOut, code := runCLI(t, "init", "--app-id", "shop", "--bootstrap-server", cluster.ListenAddrs()[0],
		"--schema-registry-url", regURL, "--topology", "demo/topology.txt")
	if code != exitClean {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	out = strings.ReplaceAll(out, cluster.ListenAddrs()[0], "BROKER")
	checkGolden(t, "init-demo.yaml", []byte(out))
	want, err := demoFiles.ReadFile("demo/kaudit.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sameShape(t, specShape(t, "drafted", []byte(out)), specShape(t, "hand-written", want))
}

// noTopology hides a snapshot's describe() text, keeping its schemas.
type noTopology struct {
	audit.Source
	schemas map[int32]audit.Schema
}

func (n noTopology) Schemas() map[int32]audit.Schema { return n.schemas }

// TestInitInfersWithoutTopology: with neither --topology nor the
// bundle's own, the stores come from the topic names, each table's
// source from matching its repartition copies to the source records, and
// the join from the topic keyed by the tables' keys: still exactly the
// hand-written spec.
func TestInitInfersWithoutTopology(t *testing.T) {
	s, err := snapshot.Open("../../testdata/incidents/dropped")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := runInit(t.Context(), initOptions{AppID: "kaudit-drill"}, noTopology{s, s.Schemas()}, &out); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "init-dropped-no-topology.yaml", []byte(out.String()))
	want, err := os.ReadFile("../../testdata/incidents/dropped.kaudit.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sameShape(t, specShape(t, "drafted", []byte(out.String())), specShape(t, "hand-written", want))
	// Without the topology the draft cannot know the flatMapValues before
	// each selectKey; audited where the bundle's topology shows them, its
	// tables are not judged (incomplete, naming the node), never lost.
	drafted := filepath.Join(t.TempDir(), "kaudit.yaml")
	if err := os.WriteFile(drafted, []byte(out.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, errOut, code := runCLI(t, "diff", "--snapshot", "../../testdata/incidents/dropped", "--spec", drafted, "--format", "json")
	if code != exitIncomplete {
		t.Fatalf("diff with the drafted spec: exit %d, want %d: %s", code, exitIncomplete, errOut)
	}
	var r audit.Report
	if err := decodeReport([]byte(rep), &r); err != nil {
		t.Fatal(err)
	}
	if m := strings.Join(r.Summary.Missing, "\n"); !strings.Contains(m, "KSTREAM-FLATMAPVALUES-0000000001") {
		t.Errorf("missing evidence %q does not name the flatMapValues the spec leaves out", m)
	}
	for _, f := range r.Findings {
		if f.Severity == audit.SeverityLoss {
			t.Errorf("a loss from a table that is not judged: %+v", f)
		}
	}
}

// purgedRepartitions is a source whose repartition topics hold nothing:
// what real Streams leaves once it has purged them.
type purgedRepartitions struct{ audit.Source }

func (p purgedRepartitions) Offsets(ctx context.Context, tp audit.TopicPartition) (audit.PartitionOffsets, error) {
	o, err := p.Source.Offsets(ctx, tp)
	if err == nil && strings.HasSuffix(tp.Topic, "-repartition") {
		o.LogStart = o.HW
	}
	return o, err
}

func (p purgedRepartitions) Records(ctx context.Context, tp audit.TopicPartition, from, to int64) iter.Seq2[audit.Record, error] {
	if strings.HasSuffix(tp.Topic, "-repartition") {
		return func(func(audit.Record, error) bool) {}
	}
	return p.Source.Records(ctx, tp, from, to)
}

func (p purgedRepartitions) Topology() string {
	return p.Source.(interface{ Topology() string }).Topology()
}

func (p purgedRepartitions) Schemas() map[int32]audit.Schema {
	return audit.SchemasOf(p.Source)
}

// TestInitInfersPurged: with every repartition record purged, select_key
// comes from the source fields that are keys of the changelog and the
// reducer from the keys' final states: still the hand-written spec.
func TestInitInfersPurged(t *testing.T) {
	s, err := snapshot.Open("../../testdata/incidents/dropped")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := runInit(t.Context(), initOptions{AppID: "kaudit-drill"}, purgedRepartitions{s}, &out); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "init-dropped-purged.yaml", []byte(out.String()))
	want, err := os.ReadFile("../../testdata/incidents/dropped.kaudit.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sameShape(t, specShape(t, "drafted", []byte(out.String())), specShape(t, "hand-written", want))
}
