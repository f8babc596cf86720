package fuzzapps

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit/spec"
)

// testSeeds are the seeds TestGenerate checks (every family comes up in them); TestSpecMeansTheCode
// runs kaudit's evaluation over every input record of the first meaningSeeds.
const (
	testSeeds    = 400
	meaningSeeds = 120
)

// TestGenerate: every seed gives a valid description, the same one each time, whose spec kaudit
// parses; over the seeds every family, fault and serde comes up.
func TestGenerate(t *testing.T) {
	seen := map[string]int{}
	for seed := uint64(1); seed <= testSeeds; seed++ {
		d := Generate(seed)
		if err := Valid(d); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		a, _ := json.Marshal(d)
		b, _ := json.Marshal(Generate(seed))
		if !bytes.Equal(a, b) {
			t.Fatalf("seed %d: two descriptions", seed)
		}
		s := GenerateSpec(d)
		if _, err := spec.ParseSpec(fmt.Sprintf("seed-%d.yaml", seed), []byte(s.YAML)); err != nil {
			t.Fatalf("seed %d: kaudit refuses the spec: %v\n%s", seed, err, s.YAML)
		}
		for _, f := range d.Families() {
			seen[f]++
		}
		seen["fault-"+d.Fault]++
		todo := strings.Contains(s.YAML, "# TODO (not expressible)")
		if unitUnmodelledAny(d) && s.Expect() != "incomplete" || !unitUnmodelledAny(d) && (s.Expect() == "incomplete") != todo {
			t.Errorf("seed %d: an unmodelled unit %v, TODO %v, expected verdict %s (%v)", seed, unitUnmodelledAny(d), todo, s.Expect(), s.Unmodelled)
		}
		if todo && !unitUnmodelledAny(d) {
			seen["todo-in-modelled"]++
		}
		if d.Fault == FaultDropped && len(d.DropIDs) == 0 {
			t.Errorf("seed %d: dropped with no record to drop", seed)
		}
	}
	if seen["todo-in-modelled"] > testSeeds/20 {
		t.Errorf("%d of %d apps of modelled units only have a TODO in their spec", seen["todo-in-modelled"], testSeeds)
	}
	for _, want := range []string{"filter", "mapValues", "flatMapValues", "peek", "map", "selectKey", "merge", "split", "groupBy",
		"count", "aggregate", "reduce-latest", "reduce-sum", "reduce-max", "tumbling-window", "hopping-window", "session-window",
		"suppress", "table", "toTable", "tableJoin", "join-inner", "join-left", "join-outer", "streamTableJoin", "tableGroupBy",
		"cogroup", "tableFilter", "tableMapValues", "fkJoin", "streamJoin", "globalJoin", "source-json", "source-avro",
		"source-string", "source-int", "source-long", "key-int", "key-long", "tombstones", "null-keys", "reset-earliest", "reset-latest",
		"fault-none", "fault-kill9", "fault-restart", "fault-broker-restart", "fault-source-gap", "fault-repartition-purge", "fault-dropped"} {
		if seen[want] == 0 {
			t.Errorf("no seed of %d makes %s", testSeeds, want)
		}
	}
}

func unitUnmodelledAny(d *Desc) bool {
	for _, n := range d.Nodes {
		if unitUnmodelled(d, n.Unit) {
			return true
		}
	}
	return false
}

// canon is v as kaudit decodes a record: numbers json.Number, records maps.
func canon(v any) any {
	if v == nil {
		return nil
	}
	b, _ := json.Marshal(v)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	_ = dec.Decode(&out)
	return out
}

func jsonText(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestSpecMeansTheCode: the generated spec's steps and reducers, run by kaudit on every input
// record, give what the Go model of the app (the Java interpreter's meaning) gives: the spec is
// the app's.
func TestSpecMeansTheCode(t *testing.T) {
	checked := map[string]int{}
	for seed := uint64(1); seed <= meaningSeeds; seed++ {
		d := Generate(seed)
		s, err := spec.ParseSpec("x.yaml", []byte(GenerateSpec(d).YAML))
		if err != nil {
			t.Fatal(err)
		}
		recs := slices.Concat(Records(d)...)
		for _, ts := range s.Tables {
			n := d.Node(strings.TrimPrefix(ts.Name, "t-"))
			if n == nil || ts.Regroup != "" || len(ts.Cogroup) > 0 {
				continue
			}
			end := n
			for end.Op == "count" || end.Op == "reduce" || end.Op == "aggregate" || end.Op == "windowedBy" || end.Op == "toTable" {
				end = d.Node(end.In[0])
			}
			folds := map[string]any{}
			for _, src := range ts.SourceList {
				var from *Node
				for _, x := range d.Sources() {
					if x.Topic == src {
						from = x
					}
				}
				path := Path(d, from, end)
				if path == nil {
					t.Fatalf("seed %d: no path from %s to %s", seed, from.ID, end.ID)
				}
				for _, r := range recs {
					if r.Topic != src {
						continue
					}
					want := Apply(d, path, r.Key, r.Value)
					got, err := ts.Apply(spec.RecordEnv{Key: canon(r.Key), Value: canon(r.Value)})
					if err != nil {
						t.Fatalf("seed %d table %s: kaudit fails on %s: %v", seed, ts.Name, jsonText(r), err)
					}
					if jsonText(canon(elementsOf(want))) != jsonText(canon(elementsOfSpec(got))) {
						t.Fatalf("seed %d table %s, record %s:\n go   %s\n spec %s\n%s", seed, ts.Name, jsonText(r), jsonText(elementsOf(want)), jsonText(elementsOfSpec(got)), GenerateSpec(d).YAML)
					}
					checked["step"]++
					if n.Op == "toTable" || n.Op == "table" {
						continue
					}
					for i, e := range want {
						if e.Key == nil || e.Value == nil {
							continue
						}
						k := jsonText(e.Key)
						agg, first := folds[k], folds[k] == nil
						folds[k] = Fold(n, agg, e.Value, first)
						kagg, kerr := ts.Reduce(canon(agg), canon(got[i].Value), first)
						if kerr != nil {
							t.Fatalf("seed %d table %s: kaudit's reducer fails: %v", seed, ts.Name, kerr)
						}
						if jsonText(canon(folds[k])) != jsonText(canon(kagg)) {
							t.Fatalf("seed %d table %s key %s: go folds to %s, the spec's reducer to %s", seed, ts.Name, k, jsonText(folds[k]), jsonText(kagg))
						}
						checked["fold"]++
					}
				}
			}
		}
		for _, c := range s.Copies {
			var to *Node
			for _, x := range d.Nodes {
				if x.Op == "to" && x.Topic == c.Output {
					to = x
				}
			}
			var from *Node
			for _, x := range d.Sources() {
				if x.Topic == c.Source {
					from = x
				}
			}
			path := Path(d, from, d.Node(to.In[0]))
			for _, r := range recs {
				if r.Topic != c.Source {
					continue
				}
				want := Apply(d, path, r.Key, r.Value)
				got, err := c.Apply(spec.RecordEnv{Key: canon(r.Key), Value: canon(r.Value)})
				if err != nil {
					t.Fatalf("seed %d copy %s: kaudit fails on %s: %v", seed, c.Output, jsonText(r), err)
				}
				if jsonText(canon(elementsOf(want))) != jsonText(canon(elementsOfSpec(got))) {
					t.Fatalf("seed %d copy %s, record %s:\n go   %s\n spec %s", seed, c.Output, jsonText(r), jsonText(elementsOf(want)), jsonText(elementsOfSpec(got)))
				}
				checked["copy"]++
			}
		}
	}
	t.Logf("checked %v", checked)
	if checked["step"] == 0 || checked["fold"] == 0 || checked["copy"] == 0 {
		t.Errorf("too little checked: %v", checked)
	}
}

func elementsOf(l []Element) [][2]any {
	out := [][2]any{}
	for _, e := range l {
		out = append(out, [2]any{e.Key, e.Value})
	}
	return out
}

func elementsOfSpec(l []spec.Element) [][2]any {
	out := [][2]any{}
	for _, e := range l {
		out = append(out, [2]any{e.Key, e.Value})
	}
	return out
}

// TestRecords: the input is the same each time, ids are unique, late records only for windowed
// sources and after the first wave, the dropped records reach the repartition topic.
func TestRecords(t *testing.T) {
	for seed := uint64(1); seed <= 100; seed++ {
		d := Generate(seed)
		a, b := Records(d), Records(d)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: two inputs", seed)
		}
		ids := map[string]bool{}
		win := windowedSources(d)
		for w, wave := range a {
			for _, r := range wave {
				if ids[r.ID] {
					t.Fatalf("seed %d: id %s twice", seed, r.ID)
				}
				ids[r.ID] = true
				if r.Late && (w == 0 || win[sourceOf(d, r.Topic).ID] == nil) {
					t.Fatalf("seed %d: late record %s of %s in wave %d", seed, r.ID, r.Topic, w+1)
				}
			}
		}
		for _, id := range d.DropIDs {
			if !ids[id] {
				t.Fatalf("seed %d: drop id %s is no record", seed, id)
			}
		}
	}
}

func sourceOf(d *Desc, topic string) *Node {
	for _, s := range d.Sources() {
		if s.Topic == topic {
			return s
		}
	}
	return nil
}

// TestShrink: every candidate is valid, keeps the fault, and is smaller than the description.
func TestShrink(t *testing.T) {
	n := 0
	for seed := uint64(1); seed <= 60; seed++ {
		d := Generate(seed)
		for _, c := range Shrink(d) {
			n++
			if err := Valid(c); err != nil {
				t.Fatalf("seed %d: a candidate is not valid: %v", seed, err)
			}
			if c.Fault != d.Fault {
				t.Fatalf("seed %d: the fault %s became %s", seed, d.Fault, c.Fault)
			}
			if size(c) >= size(d) {
				t.Fatalf("seed %d: a candidate of size %d for %d", seed, size(c), size(d))
			}
			if _, err := spec.ParseSpec("x.yaml", []byte(GenerateSpec(c).YAML)); err != nil {
				t.Fatalf("seed %d: kaudit refuses a candidate's spec: %v", seed, err)
			}
		}
	}
	if n < 100 {
		t.Errorf("only %d candidates from 60 seeds", n)
	}
}

// size orders descriptions for the shrinker: nodes first, then input, then settings.
func size(d *Desc) int {
	s := len(d.Nodes)*100000 + d.Input.Waves*10000 + d.Input.PerWave*100 + d.Input.Keys + int(d.Partitions)*10
	if d.Named {
		s++
	}
	return s
}

// TestViolationDescriptions: every description VIOLATIONS.md reruns is valid and its spec parses.
func TestViolationDescriptions(t *testing.T) {
	files, err := filepath.Glob("violations/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no violations/*.json (%v)", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d Desc
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := Valid(&d); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		if _, err := spec.ParseSpec(f, []byte(GenerateSpec(&d).YAML)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
