package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/snapshot"
	"github.com/kaudit/kaudit/internal/fakeregistry"
)

// TestUnknownSchemaMissingEvidence: an Avro app audited against a registry
// that knows none of its schema ids (every lookup a 404) is incomplete
// (exit 3), with the missing schemas in missing_evidence, a bounded number
// of entries, and no undecodable finding per record.
func TestUnknownSchemaMissingEvidence(t *testing.T) {
	bs, _, spec := avroCluster(t)
	empty := fakeregistry.NewServer(t)
	out := filepath.Join(t.TempDir(), "report.json")
	res := runGuarded(t, "diff", "--spec", spec, "--bootstrap-server", bs, "--timeout", "2s",
		"--schema-registry-url", empty.URL, "--format", "json", "--output", out)
	if res.code != exitIncomplete {
		t.Fatalf("exit %d, want %d (stderr %s)", res.code, exitIncomplete, res.stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Summary struct {
			Verdict string   `json:"verdict"`
			Missing []string `json:"missing_evidence"`
		} `json:"summary"`
		Findings []audit.Finding `json:"findings"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	undecodable := 0
	for _, f := range doc.Findings {
		if f.Cause == audit.CauseUndecodable {
			undecodable++
		}
	}
	schemas := 0
	for _, m := range doc.Summary.Missing {
		if strings.Contains(m, "unknown schema") {
			schemas++
		}
	}
	t.Logf("verdict %s, %d findings (%d undecodable), %d missing entries (%d about schemas)", doc.Summary.Verdict,
		len(doc.Findings), undecodable, len(doc.Summary.Missing), schemas)
	if undecodable > 0 || schemas == 0 || len(doc.Summary.Missing) > 40 {
		t.Fatalf("%d undecodable findings, %d missing schemas in %d missing entries %q; want none, some, and a bounded number",
			undecodable, schemas, len(doc.Summary.Missing), doc.Summary.Missing)
	}
}

// TestCaptureKeepsSchemas: a capture of an Avro app given the registry
// stores the schemas of the records it copies, so that the bundle audits
// offline, without the registry, to the live verdict; captured again
// from the bundle, it keeps them.
func TestCaptureKeepsSchemas(t *testing.T) {
	bs, reg, spec := avroCluster(t)
	live := runGuarded(t, "diff", "--spec", spec, "--bootstrap-server", bs, "--schema-registry-url", reg.URL)
	if live.code != exitClean {
		t.Fatalf("live: exit %d, %s", live.code, live.stderr)
	}
	dir := filepath.Join(t.TempDir(), "bundle")
	res := runGuarded(t, "capture", "--app-id", "shop", "--bootstrap-server", bs, "--schema-registry-url", reg.URL, "--out", dir,
		"--topology", filepath.Join(filepath.Dir(spec), "topology.txt"))
	if res.code != exitClean {
		t.Fatalf("capture: exit %d, %s", res.code, res.stderr)
	}
	again := filepath.Join(t.TempDir(), "again")
	if res := runGuarded(t, "capture", "--app-id", "shop", "--snapshot", dir, "--out", again); res.code != exitClean {
		t.Fatalf("capture of the bundle: exit %d, %s", res.code, res.stderr)
	}
	for _, d := range []string{dir, again} {
		m, err := snapshotManifest(d)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Schemas) == 0 {
			t.Fatalf("%s holds no schemas (missing %q)", d, m.Missing)
		}
		off := runGuarded(t, "diff", "--spec", spec, "--snapshot", d)
		t.Logf("offline %s: %s", d, off.stdout)
		if off.code != live.code {
			t.Fatalf("offline audit of %s: exit %d, live %d; stderr %s", d, off.code, live.code, off.stderr)
		}
	}
}

func snapshotManifest(dir string) (*snapshot.Manifest, error) { return snapshot.ReadManifest(dir) }
