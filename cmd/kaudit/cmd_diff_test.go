package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/internal/fakeapp"
	"github.com/kaudit/kaudit/internal/fakeregistry"
)

const jsonSpec = `app_id: shop
serdes: {key: string, value: json}
tables:
  - {name: orders,    source: orders-v1,    select_key: value.orderId, reduce: latest, store: KSTREAM-REDUCE-STATE-STORE-0000000002}
  - {name: payments,  source: payments-v1,  select_key: value.orderId, reduce: latest, store: KSTREAM-REDUCE-STATE-STORE-0000000009}
  - {name: shipments, source: shipments-v1, select_key: value.orderId, reduce: latest, store: KSTREAM-REDUCE-STATE-STORE-0000000016}
joins:
  - {output: order-status, left: orders, right: [payments, shipments], type: left}
`

// seedAppCluster writes a seed-shaped app (JSON values) into kfake.
func seedAppCluster(t *testing.T, faults ...fakeapp.Fault) (addr, spec string) {
	t.Helper()
	return seedAppClusterWith(t, nil, faults...)
}

// seedAppClusterWith encodes values with encode (JSON when nil).
func seedAppClusterWith(t *testing.T, encode func(string, map[string]any) ([]byte, error), faults ...fakeapp.Fault) (addr, spec string) {
	t.Helper()
	s := fakeapp.SeedScenario("shop", 150)
	s.Faults = faults
	s.Encode = encode
	c, _ := fakeapp.KfakeApp(t, s)
	spec = filepath.Join(t.TempDir(), "kaudit.yaml")
	if err := os.WriteFile(spec, []byte(jsonSpec), 0o600); err != nil {
		t.Fatal(err)
	}
	return c.ListenAddrs()[0], spec
}

func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestDiffVerdicts(t *testing.T) {
	addr, spec := seedAppCluster(t)
	lossy, lossySpec := seedAppCluster(t, fakeapp.Fault{Kind: fakeapp.FaultDrop, Table: 1})
	enc, err := fakeapp.NewAvroEncoder(fakeregistry.New())
	if err != nil {
		t.Fatal(err)
	}
	avroAddr, _ := seedAppClusterWith(t, enc.Encode)
	out := filepath.Join(t.TempDir(), "r.json")
	for _, tt := range []struct {
		name    string
		args    []string
		code    int
		verdict audit.Verdict
		stderr  string
	}{
		{"clean", []string{"diff", "--bootstrap-server", addr, "--spec", spec, "--format", "json"}, exitClean, audit.VerdictClean, ""},
		{"loss", []string{"diff", "--bootstrap-server", lossy, "--spec", lossySpec, "--format", "json"}, exitFindings, audit.VerdictLoss, ""},
		{"no spec: keyless checks", []string{"diff", "--bootstrap-server", addr, "--app-id", "shop", "--format", "json"}, exitClean, audit.VerdictClean, ""},
		{"unknown app: a usage error naming the groups", []string{"diff", "--bootstrap-server", addr, "--app-id", "nope", "--format", "json"}, exitUsage, "", "its groups: shop"},
		{"schema registry down", []string{"diff", "--bootstrap-server", avroAddr, "--spec", spec, "--value-serde", "avro", "--schema-registry-url", "http://" + closedPort(t), "--format", "json"},
			exitIncomplete, audit.VerdictIncomplete, ""},
		{"unreachable cluster", []string{"diff", "--bootstrap-server", closedPort(t), "--spec", spec, "--timeout", "2s"}, exitNotRun, "", "kaudit:"},
		{"bad spec", []string{"diff", "--bootstrap-server", addr, "--spec", filepath.Join(t.TempDir(), "missing.yaml")}, exitUsage, "", "kaudit:"},
		{"two sources", []string{"diff", "--bootstrap-server", addr, "--snapshot", t.TempDir(), "--app-id", "shop"}, exitUsage, "", "one of"},
		{"output file", []string{"diff", "--bootstrap-server", lossy, "--spec", lossySpec, "--output", out, "--format", "json"}, exitFindings, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstderr: %s", code, tt.code, stderr)
			}
			if tt.stderr != "" && !strings.Contains(stderr, tt.stderr) {
				t.Errorf("stderr %q lacks %q", stderr, tt.stderr)
			}
			if tt.verdict == "" {
				return
			}
			var rep audit.Report
			if err := decodeReport([]byte(stdout), &rep); err != nil {
				t.Fatalf("parse report: %v\n%s", err, stdout)
			}
			if rep.Summary.Verdict != tt.verdict {
				t.Errorf("verdict %s, want %s (missing %v)", rep.Summary.Verdict, tt.verdict, rep.Summary.Missing)
			}
		})
	}
	b, err := os.ReadFile(out)
	if err != nil || !json.Valid(b) {
		t.Errorf("--output: %v, valid JSON %v", err, json.Valid(b))
	}
}

// TestSaveSpecNothingInferred: --save-spec where no spec can be inferred
// (a real broker's log dirs, an app that folds no table) does not throw the
// audit away: the report and its verdict's exit status stand, stderr says
// the file was not written.
func TestSaveSpecNothingInferred(t *testing.T) {
	saved := filepath.Join(t.TempDir(), "inferred.yaml")
	out, errOut, code := runCLI(t, "diff", "--log-dir", filepath.Join("..", "..", "audit", "segment", "testdata", "real", "kafka-3.6.2-logdir"),
		"--app-id", "gen-app", "--save-spec", saved, "--format", "json")
	if code != exitFindings {
		t.Fatalf("exit %d, want %d (the verdict's): %s", code, exitFindings, errOut)
	}
	if !strings.Contains(out, `"verdict"`) || !strings.Contains(errOut, "no spec could be inferred") {
		t.Errorf("report %d bytes, stderr %q: want the report, and stderr saying no spec was written", len(out), errOut)
	}
	if _, err := os.Stat(saved); !os.IsNotExist(err) {
		t.Errorf("%s: %v, want not written", saved, err)
	}
}
