package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
)

// auditOffline captures the app's topics with kaudit capture (the schemas
// exported from the registry into the bundle), audits the capture with
// kaudit diff --snapshot, and checks that the offline audit names exactly
// the loss and anomaly findings the live one did. The capture is left in
// dir/capture (testdata/incidents/ holds one such bundle).
func (r *scRun) auditOffline(ctx context.Context, live kauditReport) error {
	capture := filepath.Join(r.dir, "capture")
	if err := r.capture(ctx, capture, "capture-offline"); err != nil {
		return err
	}
	out := filepath.Join(r.dir, "kaudit-snapshot.json")
	code, stderr, err := r.d.runKaudit(ctx, r.dir, "diff-snapshot", "diff", "--snapshot", capture,
		"--spec", filepath.Join(r.d.root, "drill", "kaudit.yaml"), "--format", "json", "--output", out)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return fmt.Errorf("kaudit diff --snapshot exited %d without JSON: %s", code, lastLines(stderr, 5))
	}
	var off kauditReport
	if err := json.Unmarshal(b, &off); err != nil {
		return fmt.Errorf("decode kaudit diff --snapshot JSON: %w", err)
	}
	if off.Summary.Verdict != live.Summary.Verdict {
		return fmt.Errorf("kaudit diff --snapshot says %s, the live audit %s", off.Summary.Verdict, live.Summary.Verdict)
	}
	ids := func(rep kauditReport) []string {
		var out []string
		for _, f := range rep.Findings {
			if f.Severity == "loss" || f.Severity == "anomaly" {
				out = append(out, fmt.Sprintf("%s/%s %s/%d@%d key=%s", f.Stage, f.Cause, f.Topic, f.Partition, f.Offset, f.keyString()))
			}
		}
		slices.Sort(out)
		return out
	}
	if a, b := ids(live), ids(off); !slices.Equal(a, b) {
		return fmt.Errorf("kaudit diff --snapshot found %v, the live audit %v", b, a)
	}
	logf("offline: kaudit diff --snapshot on the capture names the same %d findings as the live audit", len(ids(live)))
	return nil
}

// capture writes a fresh kaudit capture of the app's topics into dir, with the registry's
// schemas exported into the bundle (name names kaudit's stderr file).
func (r *scRun) capture(ctx context.Context, dir, name string) error {
	schemas := filepath.Join(r.dir, "schemas")
	if err := exportSchemas(ctx, r.d.regURL, schemas); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	code, stderr, err := r.d.runKaudit(ctx, r.dir, name, "capture", "--app-id", appID, "--bootstrap-server", r.d.bootstrap,
		"--topology", filepath.Join(r.dir, "describe.txt"), "--schemas", schemas, "--out", dir)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("kaudit capture exited %d: %s", code, lastLines(stderr, 5))
	}
	return nil
}

// exportSchemas writes every schema of the registry to dir/schemas.json, as kaudit's codec
// reads them: each with its type, a Protobuf schema with the files it imports (its references
// resolved), so that an audit without the registry decodes every format.
func exportSchemas(ctx context.Context, regURL, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	c, err := codec.New(codec.Config{RegistryURL: regURL, ValueSerde: codec.SerdeAvro, Timeout: 10 * time.Second})
	if err != nil {
		return fmt.Errorf("export schemas: %w", err)
	}
	out := map[string]audit.Schema{}
	for id := int32(1); ; id++ {
		sc, err := c.Schema(ctx, id)
		if errors.Is(err, codec.ErrUnknownSchema) && !errors.Is(err, codec.ErrBadSchema) {
			break
		}
		if err != nil {
			return fmt.Errorf("export schema %d: %w", id, err)
		}
		out[strconv.Itoa(int(id))] = sc
	}
	if len(out) == 0 {
		return errors.New("export schemas: the registry holds none")
	}
	return writeJSON(filepath.Join(dir, codec.SchemasFile), out)
}
