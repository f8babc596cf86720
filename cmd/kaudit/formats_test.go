package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/internal/fakeapp"
	"github.com/kaudit/kaudit/internal/fakeregistry"
)

// TestFormatsDemoIncident writes the demo's incident (seven injected
// faults) with Avro, Protobuf and JSON Schema values in turn and audits
// it live with the demo's spec (its serdes the format's), live with
// --app-id alone, and from a capture without the registry: each run names
// exactly the injected losses and anomalies, whatever the format; kaudit
// init drafts the format's serde.
func TestFormatsDemoIncident(t *testing.T) {
	for _, format := range []string{"avro", "protobuf", "json-schema"} {
		t.Run(format, func(t *testing.T) {
			reg := fakeregistry.New()
			srv := httptest.NewServer(reg)
			t.Cleanup(srv.Close)
			s := demoScenario(90)
			switch format {
			case "avro":
				enc, err := fakeapp.NewAvroEncoder(reg)
				if err != nil {
					t.Fatal(err)
				}
				s.Encode = enc.Encode
			case "protobuf":
				enc, err := fakeapp.NewProtobufEncoder(reg)
				if err != nil {
					t.Fatal(err)
				}
				s.Encode = enc.Encode
			case "json-schema":
				s.Encode = fakeapp.NewJSONSchemaEncoder(reg).Encode
			}
			f, truth, err := fakeapp.WriteFake(t.Context(), s, loopback())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(f.Close)
			bs := strings.Join(f.ListenAddrs(), ",")
			dir := t.TempDir()
			for _, name := range []string{"kaudit.yaml", "topology.txt"} {
				data, err := demoFiles.ReadFile("demo/" + name)
				if err != nil {
					t.Fatal(err)
				}
				data = []byte(strings.Replace(string(data), "value: avro}", "value: "+format+"}", 1))
				if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			spec := filepath.Join(dir, "kaudit.yaml")
			bundle := filepath.Join(dir, "bundle")
			if out, errOut, code := runCLI(t, "capture", "--app-id", "shop", "--bootstrap-server", bs, "--schema-registry-url", srv.URL,
				"--topology", filepath.Join(dir, "topology.txt"), "--out", bundle); code != exitClean {
				t.Fatalf("capture: exit %d: %s%s", code, out, errOut)
			}
			m, err := snapshotManifest(bundle)
			if err != nil {
				t.Fatal(err)
			}
			for id, sc := range m.Schemas {
				if wantType := map[string]string{"avro": "", "protobuf": "PROTOBUF", "json-schema": "JSON"}[format]; sc.Type != wantType ||
					(format == "protobuf" && sc.Deps["demo/common.proto"] != fakeapp.ProtoCommon) {
					t.Errorf("the bundle's schema %d: type %q, imports %v", id, sc.Type, sc.Deps)
				}
			}
			// kaudit init names the format: from the schemas' types
			draft, errOut, code := runCLI(t, "init", "--app-id", "shop", "--snapshot", bundle)
			if code != exitClean || !strings.Contains(draft, "value: "+format+"}") {
				t.Errorf("init: exit %d, %s; the draft's serdes are not %s:\n%s", code, errOut, format, draft)
			}
			for _, run := range []struct {
				name string
				args []string
			}{
				{"live, spec", []string{"diff", "--bootstrap-server", bs, "--schema-registry-url", srv.URL, "--spec", spec}},
				{"live, --app-id alone", []string{"diff", "--bootstrap-server", bs, "--schema-registry-url", srv.URL, "--app-id", "shop",
					"--topology", filepath.Join(dir, "topology.txt")}},
				{"capture, spec", []string{"diff", "--snapshot", bundle, "--spec", spec}},
				{"capture, --app-id alone", []string{"diff", "--snapshot", bundle, "--app-id", "shop"}},
			} {
				out, errOut, code := runCLI(t, append(run.args, "--format", "json")...)
				var rep audit.Report
				if err := decodeReport([]byte(out), &rep); err != nil {
					t.Fatalf("%s: exit %d, %v: %s", run.name, code, err, errOut)
				}
				var got []fakeapp.Expected
				for _, f := range rep.Findings {
					if f.Severity == audit.SeverityLoss || f.Severity == audit.SeverityAnomaly {
						got = append(got, fakeapp.Expected{Stage: f.Stage, Cause: f.Cause, Topic: f.Topic, Partition: f.Partition, Offset: f.Offset, Key: f.Key})
					}
				}
				if missed, extra := fakeapp.Match(truth.Findings, got); len(missed)+len(extra) > 0 || code != exitFindings || rep.Summary.Records["undecodable"] > 0 {
					t.Errorf("%s: exit %d, verdict %s; missed %v, unexpected %v; missing %q", run.name, code, rep.Summary.Verdict, missed, extra, rep.Summary.Missing)
				}
			}
		})
	}
}
