package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec/registrytest"
)

// TestUnknownSchemaMissingEvidence: an Avro app audited against a registry
// that knows none of its schema ids (every lookup a 404) is incomplete
// (exit 3), with the missing schemas in missing_evidence, a bounded number
// of entries, and no undecodable finding per record.
func TestUnknownSchemaMissingEvidence(t *testing.T) {
	bs, _, spec := avroCluster(t)
	empty := registrytest.NewServer(t)
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
