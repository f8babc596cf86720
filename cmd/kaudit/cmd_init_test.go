package main

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit/spec"

	"github.com/kaudit/kaudit/audit/discovery"

	"github.com/kaudit/kaudit/audit/topology"
)

// fillTODOs answers the draft's TODOs the way a person would for the seed
// app.
func fillTODOs(draft string) string {
	r := strings.NewReplacer(
		`"TODO: the new key selectKey/groupBy computes, e.g. value.orderId; remove the line if the key is unchanged"`, "value.orderId",
		`"TODO: latest | count | sum(FIELD) | sum | {expr: \"…agg…value…\"}"`, "latest",
		`"TODO: the joiner's result over left, r1, r2, or remove this line to check presence only"`, `'{"id": left.orderId, "paid": r1?.amount, "carrier": r2?.carrier}'`,
	)
	out := r.Replace(draft)
	// Without a topology the source of each store is a person's answer too.
	return regexp.MustCompile(`source: "TODO: which source topic feeds store KSTREAM-REDUCE-STATE-STORE-0000000002[^"]*"`).
		ReplaceAllString(out, "source: orders-v1")
}

func TestInitCommand(t *testing.T) {
	out, errOut, code := runCLI(t, "init", "--app-id", "orders-app", "--topology", seedTopologyFile())
	if code != exitClean || errOut != "" {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	checkGolden(t, "init-seed.yaml", []byte(out))
	t.Run("the draft does not load before its TODOs are filled", func(t *testing.T) {
		_, err := spec.ParseSpec("kaudit.yaml", []byte(out))
		if err == nil || !strings.Contains(err.Error(), "kaudit.yaml:10: tables[0].select_key: still TODO") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("filled in, it loads and resolves against the topology", func(t *testing.T) {
		filled := fillTODOs(out)
		if strings.Contains(filled, `"TODO`) {
			t.Fatalf("TODO left after filling:\n%s", filled)
		}
		sp, err := spec.ParseSpec("kaudit.yaml", []byte(filled))
		if err != nil {
			t.Fatal(err)
		}
		topo, err := topology.ReadFile(seedTopologyFile())
		if err != nil {
			t.Fatal(err)
		}
		plan, err := spec.Resolve(sp, topo, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Tables) != 3 || len(plan.Joins) != 1 || plan.Joins[0].Output != "order-status" || len(plan.Warnings) != 0 ||
			plan.Tables[1].Repartition != "orders-app-KSTREAM-REDUCE-STATE-STORE-0000000009-repartition" {
			t.Errorf("plan = %+v", plan)
		}
	})
	t.Run("usage errors", func(t *testing.T) {
		if _, errOut, code := runCLI(t, "init", "--topology", seedTopologyFile()); code != exitUsage || !strings.Contains(errOut, "needs --app-id") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
		if _, errOut, code := runCLI(t, "init", "--app-id", "a"); code != exitUsage || !strings.Contains(errOut, "needs --topology FILE or a source") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
	})
}

func TestRunInitFromDiscovery(t *testing.T) {
	var out bytes.Buffer
	o := initOptions{AppID: "orders-app", KeySerde: "string", ValueSerde: "avro"}
	if err := runInit(t.Context(), o, seedCluster(), &out); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "init-seed-discovery.yaml", out.Bytes())
	filled := fillTODOs(out.String())
	filled = regexp.MustCompile(`source: "TODO: which source topic feeds store KSTREAM-REDUCE-STATE-STORE-00000000(09|16)[^"]*"`).
		ReplaceAllStringFunc(filled, func(s string) string {
			if strings.Contains(s, "0009") {
				return "source: payments-v1"
			}
			return "source: shipments-v1"
		})
	sp, err := spec.ParseSpec("kaudit.yaml", []byte(filled))
	if err != nil {
		t.Fatalf("%v\n%s", err, filled)
	}
	plan, err := spec.Resolve(sp, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	d, err := discovery.Discover(t.Context(), seedCluster(), "orders-app", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := discovery.CheckPlan(sp, d, plan); err != nil {
		t.Errorf("the filled-in draft does not match the cluster: %v", err)
	}
}

// TestInitDraftsLoad: for every topology Kafka Streams printed, the draft
// loads once its TODOs are answered, and resolves against the topology.
func TestInitDraftsLoad(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(describeOut, "*", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("describe texts: %v", err)
	}
	todo := regexp.MustCompile(`"TODO: ([a-z]+)(?:[^"\\]|\\.)*"`)
	answers := map[string]string{"the": "value.id", "true": `"value.id != nil"`, "latest": "latest", "a": "t1", "its": "own-store", "count": "count"}
	for _, file := range files {
		name := filepath.Base(filepath.Dir(file)) + "/" + filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			if err := runInit(t.Context(), initOptions{AppID: "app", TopologyFile: file}, nil, &out); err != nil {
				t.Fatal(err)
			}
			filled := todo.ReplaceAllStringFunc(out.String(), func(m string) string {
				word := todo.FindStringSubmatch(m)[1]
				if strings.Contains(m, "joiner's result over stream") {
					return "stream"
				}
				if strings.Contains(m, "joiner's result") {
					return "left"
				}
				if strings.Contains(m, "folded from") {
					return "some-topic"
				}
				if a, ok := answers[word]; ok {
					return a
				}
				t.Fatalf("no answer for %s", m)
				return ""
			})
			sp, err := spec.ParseSpec("kaudit.yaml", []byte(filled))
			if err != nil {
				t.Fatalf("%v\n%s", err, filled)
			}
			if strings.Contains(out.String(), "describe the tables by hand") {
				return // the hand-made table is not in the topology
			}
			topo, err := topology.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := spec.Resolve(sp, topo, ""); err != nil {
				t.Errorf("%v\n%s", err, filled)
			}
		})
	}
}
