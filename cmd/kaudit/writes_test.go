package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestWriteRule holds every path kaudit writes to its one rule
// (internal/dest), through the commands: --output, --save-spec,
// --spill-dir, --exchange (and the run's folder in it), capture --out and
// the profiles are refused (exit 2, the flag named, before any work)
// inside an input, through a symlink, over an existing file without
// --force, into a folder that does not exist, and outside the folder
// named; nothing under the inputs changes and nothing is created where
// the path was refused. --force replaces a report or a spec.
func TestWriteRule(t *testing.T) {
	bundle := copyTree(t, "../../testdata/incidents/dropped")
	specs := copyTree(t, "../../testdata/incidents")
	spec := filepath.Join(specs, "dropped.kaudit.yaml")
	segment := filepath.Join(bundle, "orders-0", "00000000000000000000.log")
	logs := t.TempDir()
	appLog := filepath.Join(logs, "app.log")
	if err := os.WriteFile(appLog, []byte("[2026-01-01 00:00:00,000] INFO started (org.apache.kafka.streams.KafkaStreams)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	old := filepath.Join(out, "old.json")
	if err := os.WriteFile(old, []byte("last night\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "old-timeline.svg"), []byte("<svg/>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(out, "link.yaml")
	if err := os.Symlink(filepath.Join(bundle, "manifest.json"), link); err != nil {
		t.Fatal(err)
	}
	aFile := filepath.Join(out, "a-file")
	if err := os.WriteFile(aFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	exchange := filepath.Join(out, "exchange")
	if err := os.Mkdir(exchange, 0o755); err != nil {
		t.Fatal(err)
	}
	inputs := map[string]map[string]string{bundle: treeState(t, bundle), specs: treeState(t, specs), logs: treeState(t, logs)}
	inferred := []string{"diff", "--snapshot", bundle, "--app-id", "kaudit-drill", "--app-log", appLog, "-q", "--format", "json"}
	audit := []string{"diff", "--snapshot", bundle, "--spec", spec, "-q", "--format", "json"}
	shard := with(audit, "--shard", "0/2", "--exchange-wait", "1s")
	for _, tt := range []struct {
		name    string
		args    []string
		stderr  string // the refusal names it
		created string // must not exist afterwards
	}{
		{"--save-spec over the bundle's manifest", with(inferred, "--save-spec", filepath.Join(bundle, "manifest.json")), "--save-spec", ""},
		{"--save-spec over a segment", with(inferred, "--save-spec", segment), "--save-spec", ""},
		{"--save-spec over the --app-log", with(inferred, "--save-spec", appLog), "--save-spec", ""},
		{"--save-spec into the bundle", with(inferred, "--save-spec", filepath.Join(bundle, "kaudit.yaml")), "--save-spec", filepath.Join(bundle, "kaudit.yaml")},
		{"--save-spec over a file", with(inferred, "--save-spec", old), "it exists", ""},
		{"--save-spec through a symlink", with(inferred, "--save-spec", link), "symlink", ""},
		{"--save-spec into a missing folder", with(inferred, "--save-spec", filepath.Join(out, "no", "s.yaml")), "does not exist", filepath.Join(out, "no")},
		{"--save-spec where --output writes", with(inferred, "--save-spec", filepath.Join(out, "r.json"), "--output", filepath.Join(out, "r.json")), "named twice", filepath.Join(out, "r.json")},
		{"--output over the spec", with(audit, "--output", spec), "--output", ""},
		{"--output over a file", with(audit, "--output", old), "--force", ""},
		{"--output through a symlink", with(audit, "--output", link), "symlink", ""},
		{"--output's timeline picture over a file", []string{"diff", "--snapshot", bundle, "--spec", spec, "-q", "--output", filepath.Join(out, "old.md"), "--output", filepath.Join(out, "x.json")}, "old-timeline.svg", filepath.Join(out, "old.md")},
		{"--spill-dir in the bundle", with(audit, "--spill-dir", bundle, "--memory-budget", "1KiB"), "--spill-dir", ""},
		{"--spill-dir a file", with(audit, "--spill-dir", aFile, "--memory-budget", "1KiB"), "--spill-dir", ""},
		{"--spill-dir missing", with(audit, "--spill-dir", filepath.Join(out, "no"), "--memory-budget", "1KiB"), "--spill-dir", filepath.Join(out, "no")},
		{"--exchange in the bundle", with(shard, "--run-id", "r", "--exchange", bundle), "--exchange", ""},
		{"--exchange's run folder is the bundle", with(shard, "--run-id", filepath.Base(bundle), "--exchange", filepath.Dir(bundle)), "inside the input", ""},
		{"--exchange missing", with(shard, "--run-id", "r", "--exchange", filepath.Join(out, "no", "x")), "--exchange", filepath.Join(out, "no")},
		{"--exchange a file", with(shard, "--run-id", "r", "--exchange", aFile), "--exchange", ""},
		{"--run-id ..", with(shard, "--run-id", "..", "--exchange", exchange), "--run-id", ""},
		{"--run-id .", with(shard, "--run-id", ".", "--exchange", exchange), "--run-id", ""},
		{"capture --out into a missing folder", []string{"capture", "--snapshot", bundle, "--app-id", "kaudit-drill", "--out", filepath.Join(out, "no", "b")}, "does not exist", filepath.Join(out, "no")},
		{"capture --out a symlink", []string{"capture", "--snapshot", bundle, "--app-id", "kaudit-drill", "--out", filepath.Join(out, "blink")}, "symlink", ""},
		{"capture --out holding the spec", []string{"capture", "--snapshot", bundle, "--app-id", "kaudit-drill", "--topology", filepath.Join(specs, "README.md"), "--out", specs}, "holds the input", ""},
		{"merge --output over a file", []string{"merge", "../../report/testdata/loss.json.golden", "--output", old}, "--force", ""},
		{"demo --output over a file", []string{"demo", "--output", old}, "--output", ""},
		{"--cpuprofile over a file", []string{"--cpuprofile", old, "version"}, "--cpuprofile", ""},
		{"--memprofile over the spec", []string{"--memprofile", spec, "version"}, "--memprofile", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if strings.Contains(tt.name, "capture --out a symlink") {
				if err := os.Symlink(t.TempDir(), filepath.Join(out, "blink")); err != nil {
					t.Fatal(err)
				}
				defer os.Remove(filepath.Join(out, "blink"))
			}
			stdout, stderr, code := runCLI(t, tt.args...)
			if code != exitUsage || !strings.Contains(stderr, tt.stderr) || stdout != "" {
				t.Errorf("exit %d, stderr %q (stdout %d bytes); want %d naming %q", code, stderr, len(stdout), exitUsage, tt.stderr)
			}
			for root, want := range inputs {
				if got := treeState(t, root); !reflect.DeepEqual(got, want) {
					t.Errorf("the input %s changed", root)
				}
			}
			if b, _ := os.ReadFile(old); string(b) != "last night\n" {
				t.Errorf("the earlier report became %q", b)
			}
			if tt.created != "" {
				if _, err := os.Lstat(tt.created); err == nil {
					t.Errorf("%s was created", tt.created)
				}
			}
		})
	}
	t.Run("--force replaces a report and a spec", func(t *testing.T) {
		rep, saved := filepath.Join(out, "forced.json"), filepath.Join(out, "forced.yaml")
		for _, p := range []string{rep, saved} {
			if err := os.WriteFile(p, []byte("last night\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, stderr, code := runCLI(t, with(inferred, "--output", rep, "--save-spec", saved, "--force")...); code != exitFindings {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		for _, p := range []string{rep, saved} {
			if b, _ := os.ReadFile(p); string(b) == "last night\n" {
				t.Errorf("%s was not replaced", p)
			}
		}
		if b, _ := os.ReadFile(saved); !strings.Contains(string(b), "tables:") {
			t.Errorf("the saved spec is not one:\n%.200s", b)
		}
	})
	t.Run("the exchange's folders only under the one named", func(t *testing.T) {
		if _, stderr, code := runCLI(t, with(shard, "--run-id", "night-1", "--exchange", exchange)...); code != exitNotRun || !strings.Contains(stderr, "from shard 1/2") {
			t.Errorf("exit %d, stderr %q; want %d waiting for shard 1/2", code, stderr, exitNotRun)
		}
		entries, _ := os.ReadDir(exchange)
		if len(entries) != 1 || entries[0].Name() != "night-1" {
			t.Errorf("the exchange holds %v, want only the run's folder night-1", entries)
		}
	})
}
