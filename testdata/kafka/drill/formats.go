package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/kaudit/kaudit/audit/codec"
)

// The formats scenario (issue AE): the other two formats of Schema Registry shops. Confluent's
// own Python client (confluent-kafka from PyPI, testdata/kafka/formats/produce.py, in a venv
// setup.sh makes under the work dir) writes the sources with its ProtobufSerializer,
// JSONSerializer and AvroSerializer against the drill's registry; FormatsApp (Java, Kafka
// Streams) folds the Protobuf and the JSON Schema orders with hand-written Confluent serdes, the
// Protobuf one checked to write the Python serializer's bytes. Each app is audited clean and
// with a retention gap, live, from a capture and from the stopped brokers' log dirs, with its
// spec (testdata/kafka/formats/<app>.kaudit.yaml) and with --app-id alone.

const (
	fmtProtoOrders = "fp-orders"
	fmtProtoTotals = "fp-totals"
	fmtJSONOrders  = "fj-orders"
	fmtJSONTotals  = "fj-totals"
	fmtAvroOrders  = "fa-orders" // written by the Python AvroSerializer, read by no app: kaudit ledger decodes it
	fmtPartitions  = 2
	fmtGap         = 8 // records of partition 0 of each app's source deleted past the committed offset
)

// fmtApps are the formats scenario's two apps (FormatsApp.java).
var fmtApps = []stepsApp{
	{name: "protobuf", class: "FormatsApp", appID: "kaudit-formats-protobuf", sources: []string{fmtProtoOrders},
		outputs: []string{fmtProtoTotals}, repartitions: 1, changelogs: 1},
	{name: "json", class: "FormatsApp", appID: "kaudit-formats-json", sources: []string{fmtJSONOrders},
		outputs: []string{fmtJSONTotals}, repartitions: 1, changelogs: 1},
}

// formatsTruth is what the drill knows of the formats scenario, in truth.json.
type formatsTruth struct {
	Produced  map[string]int `json:"produced"`             // records the Python client wrote, by topic
	SameBytes int            `json:"same_bytes"`           // Protobuf records the Java serde wrote byte for byte as Python
	Gaps      map[string]any `json:"gaps"`                 // each app's deleted range
	Kaudit    []string       `json:"kaudit"`               // each audit's summary
	Ledger    map[string]int `json:"ledger_decoded"`       // records kaudit ledger decoded, by topic
	NullKeys  int            `json:"null_order_ids"`       // orders without an orderId: Streams drops them
	Sums      map[string]int `json:"sums_checked"`         // keys whose last total is the fold of the inputs, by app
	Notes     []string       `json:"notes,omitempty"`      // what the scenario saw worth saying
	Bytes     []string       `json:"bytes_diff,omitempty"` // keys whose bytes differ (none when it passes)
}

// fmtRecord is one order: its key and value in Protobuf's JSON mapping.
type fmtRecord struct {
	Key   string         `json:"key"`
	Value map[string]any `json:"value"`
}

// fmtOrders makes n orders from seq from, over 30 order ids; every 41st has no orderId.
func fmtOrders(from, n int) []fmtRecord {
	out := make([]fmtRecord, n)
	for i := range out {
		seq := from + i
		v := map[string]any{
			"seq": strconv.Itoa(seq), "amount": strconv.Itoa(1 + seq%17),
			"channel": []string{"WEB", "STORE"}[seq%2],
			"placed":  time.UnixMilli(1764496800000 + int64(seq)*1250).UTC().Format(time.RFC3339Nano),
			"tags":    map[string]any{"batch": seq / 50},
			"lines":   []any{map[string]any{"sku": fmt.Sprintf("sku-%d", seq%7), "qty": 1 + seq%3}},
		}
		if seq%41 != 40 {
			v["orderId"] = fmt.Sprintf("o-%02d", seq%30)
		}
		if seq%3 == 0 {
			v["card"] = fmt.Sprintf("4111-%04d", seq)
		} else {
			v["cash"] = map[string]any{"cents": strconv.Itoa(100 * (1 + seq%17)), "currency": "EUR"}
		}
		out[i] = fmtRecord{Key: fmt.Sprintf("k-%05d", seq), Value: v}
	}
	return out
}

// fmtJSONValue is an order as the JSON Schema app's values (order.schema.json): numbers as
// numbers, no oneof.
func fmtJSONValue(v map[string]any) map[string]any {
	n := func(x any) int64 { i, _ := strconv.ParseInt(fmt.Sprint(x), 10, 64); return i }
	out := map[string]any{"orderId": v["orderId"], "seq": n(v["seq"]), "amount": n(v["amount"]),
		"channel": v["channel"], "placed": v["placed"], "tags": v["tags"]}
	return out
}

// fmtAvroValue is an order as order.avsc has it.
func fmtAvroValue(v map[string]any) map[string]any {
	j := fmtJSONValue(v)
	t, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(v["placed"]))
	return map[string]any{"orderId": j["orderId"], "seq": j["seq"], "amount": j["amount"], "channel": j["channel"], "placed": t.UnixMilli()}
}

// fmtDescriptors compiles testdata/kafka/formats/orders.proto and its import into a
// FileDescriptorSet (the import first), which produce.py and FormatsApp load, and returns the
// Order message.
func (d *drill) fmtDescriptors(path string) (protoreflect.MessageDescriptor, error) {
	dir := filepath.Join(d.root, "formats")
	files := map[string]string{}
	for name, file := range map[string]string{"drill/common.proto": "common.proto", "drill/orders.proto": "orders.proto"} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return nil, err
		}
		files[name] = string(b)
	}
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(files)})}
	fds, err := c.Compile(context.Background(), "drill/orders.proto")
	if err != nil {
		return nil, fmt.Errorf("compile orders.proto: %w", err)
	}
	main := fds[0]
	var common protoreflect.FileDescriptor
	for i := 0; i < main.Imports().Len(); i++ {
		if imp := main.Imports().Get(i); imp.Path() == "drill/common.proto" {
			common = imp.FileDescriptor
		}
	}
	set := &descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{
		protodesc.ToFileDescriptorProto(common), protodesc.ToFileDescriptorProto(main)}}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(set)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return nil, err
	}
	return main.Messages().ByName("Order"), nil
}

// fmtPython runs produce.py in the venv with args.
func (r *scRun) fmtPython(ctx context.Context, name string, args ...string) error {
	py := filepath.Join(r.d.o.work, "venv", "bin", "python")
	cmd := exec.CommandContext(ctx, py, append([]string{filepath.Join(r.d.root, "formats", "produce.py")}, args...)...)
	out, err := cmd.CombinedOutput()
	_ = os.WriteFile(filepath.Join(r.dir, "python-"+name+".log"), out, 0o644)
	if err != nil {
		return fmt.Errorf("produce.py %s: %w: %s", name, err, lastLines(string(out), 5))
	}
	return nil
}

// fmtProduce writes recs to topic with the Python client's serializer of format, and returns
// the offsets it wrote them at, by partition.
func (r *scRun) fmtProduce(ctx context.Context, format, topic string, recs []fmtRecord) (map[int32][]int64, error) {
	in := filepath.Join(r.dir, "in-"+topic+".jsonl")
	var b bytes.Buffer
	for _, rec := range recs {
		v := rec.Value
		switch format {
		case "json":
			v = fmtJSONValue(v)
		case "avro":
			v = fmtAvroValue(v)
		}
		line, err := json.Marshal(fmtRecord{Key: rec.Key, Value: v})
		if err != nil {
			return nil, err
		}
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(in, b.Bytes(), 0o644); err != nil {
		return nil, err
	}
	out := filepath.Join(r.dir, "produced-"+topic+".jsonl")
	args := []string{"produce", "--format", format, "--topic", topic, "--bootstrap", r.d.bootstrap, "--registry", r.d.regURL}
	if format == "protobuf" {
		args = append(args, "--descriptors", filepath.Join(r.dir, "orders.fds"))
	}
	if err := r.fmtPython(ctx, "produce-"+topic, append(args, in, out)...); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	offs := map[int32][]int64{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var d struct {
			Partition int32 `json:"partition"`
			Offset    int64 `json:"offset"`
		}
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			return nil, err
		}
		offs[d.Partition] = append(offs[d.Partition], d.Offset)
	}
	r.truth.Formats.Produced[topic] += len(recs)
	return offs, nil
}

// fmtSameBytes serializes recs with the Python ProtobufSerializer and with FormatsApp's serde
// (the message given to Java as its Protobuf encoding, which Go makes from the same JSON) and
// fails unless every record's bytes are the same: frame, schema id, message indexes, message.
func (r *scRun) fmtSameBytes(ctx context.Context, md protoreflect.MessageDescriptor, recs []fmtRecord) error {
	var py, java bytes.Buffer
	for _, rec := range recs {
		line, _ := json.Marshal(rec)
		py.Write(append(line, '\n'))
		v, _ := json.Marshal(rec.Value)
		m := dynamicpb.NewMessage(md)
		if err := protojson.Unmarshal(v, m); err != nil {
			return fmt.Errorf("encode %s: %w", rec.Key, err)
		}
		payload, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			return err
		}
		line, _ = json.Marshal(map[string]string{"key": rec.Key, "payload": hex.EncodeToString(payload)})
		java.Write(append(line, '\n'))
	}
	pyIn, javaIn := filepath.Join(r.dir, "bytes-python-in.jsonl"), filepath.Join(r.dir, "bytes-java-in.jsonl")
	pyOut, javaOut := filepath.Join(r.dir, "bytes-python.jsonl"), filepath.Join(r.dir, "bytes-java.jsonl")
	if err := os.WriteFile(pyIn, py.Bytes(), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(javaIn, java.Bytes(), 0o644); err != nil {
		return err
	}
	fds := filepath.Join(r.dir, "orders.fds")
	if err := r.fmtPython(ctx, "serialize", "serialize", "--format", "protobuf", "--topic", fmtProtoOrders, "--registry", r.d.regURL,
		"--descriptors", fds, pyIn, pyOut); err != nil {
		return err
	}
	lib := r.d.appLibFor(r.streams)
	cmd := exec.CommandContext(ctx, "java", "-XX:TieredStopAtLevel=1", "-cp", filepath.Join(lib, "classes")+":"+filepath.Join(lib, "lib")+"/*",
		"kaudit.drill.FormatsApp", "serialize", fds, r.d.regURL, fmtProtoOrders, javaIn, javaOut)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("FormatsApp serialize: %w: %s", err, lastLines(string(out), 5))
	}
	read := func(path string) (map[string]string, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		out := map[string]string{}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var l struct{ Key, Hex string }
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				return nil, err
			}
			out[l.Key] = l.Hex
		}
		return out, sc.Err()
	}
	a, err := read(pyOut)
	if err != nil {
		return err
	}
	b, err := read(javaOut)
	if err != nil {
		return err
	}
	t := r.truth.Formats
	for _, rec := range recs {
		if a[rec.Key] == "" || a[rec.Key] != b[rec.Key] {
			t.Bytes = append(t.Bytes, rec.Key)
			continue
		}
		t.SameBytes++
	}
	if len(t.Bytes) > 0 {
		k := t.Bytes[0]
		return fmt.Errorf("the Java serde's bytes differ from the Python ProtobufSerializer's for %d of %d records (%s: python %s, java %s)",
			len(t.Bytes), len(recs), k, a[k], b[k])
	}
	logf("formats: the Java serde wrote the Python ProtobufSerializer's bytes for all %d records", len(recs))
	return nil
}

// fmtLedger runs kaudit ledger on topic with serde over every offset it holds and checks that
// every record's value decoded.
func (r *scRun) fmtLedger(ctx context.Context, topic, serde string, hw map[int32]int64) error {
	dir := filepath.Join(r.dir, "ledger")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	decoded := 0
	for p, end := range hw {
		if end == 0 {
			continue
		}
		var out bytes.Buffer
		code, stderr, err := r.d.runKauditTo(ctx, dir, fmt.Sprintf("ledger-%s-%d", topic, p), &out, "ledger", "--bootstrap-server", r.d.bootstrap,
			"--topic", topic, "--partition", strconv.Itoa(int(p)), "--offsets", fmt.Sprintf("0-%d", end-1),
			"--value-serde", serde, "--schema-registry-url", r.d.regURL, "--format", "json")
		if err != nil {
			return err
		}
		_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("ledger-%s-%d.json", topic, p)), out.Bytes(), 0o644)
		if code != 0 {
			return fmt.Errorf("kaudit ledger --topic %s --partition %d --value-serde %s exited %d: %s", topic, p, serde, code, lastLines(stderr, 5))
		}
		var l struct {
			Partitions []struct {
				Values []struct {
					Offset int64
					Value  json.RawMessage
				}
			}
		}
		if err := json.Unmarshal(out.Bytes(), &l); err != nil {
			return fmt.Errorf("decode kaudit ledger JSON of %s: %w", topic, err)
		}
		n := 0
		for _, lp := range l.Partitions {
			for _, v := range lp.Values {
				var m map[string]any
				if json.Unmarshal(v.Value, &m) != nil || m["seq"] == nil {
					return fmt.Errorf("kaudit ledger --value-serde %s: %s/%d@%d is %s, not a decoded order", serde, topic, p, v.Offset, v.Value)
				}
				n++
			}
		}
		if int64(n) != end {
			return fmt.Errorf("kaudit ledger --value-serde %s decoded %d records of %s/%d, which holds %d", serde, n, topic, p, end)
		}
		decoded += n
	}
	r.truth.Formats.Ledger[topic] = decoded
	logf("formats: kaudit ledger --value-serde %s decoded all %d records of %s", serde, decoded, topic)
	return nil
}

// fmtCheckSums checks each app's output against the drill's own fold of what it consumed: a
// key's last total is the sum of its orders' amounts (decoded with kaudit's codec through the
// registry).
func (r *scRun) fmtCheckSums(ctx context.Context, p *appProc, recs []fmtRecord, s state) error {
	want := map[string]int64{}
	for _, rec := range recs {
		if id, ok := rec.Value["orderId"].(string); ok {
			n, _ := strconv.ParseInt(fmt.Sprint(rec.Value["amount"]), 10, 64)
			want[id] += n
		}
	}
	serde := map[string]string{"protobuf": codec.SerdeProtobuf, "json": codec.SerdeJSONSchema}[p.name]
	dec, err := codec.New(codec.Config{ValueSerde: serde, KeySerde: codec.SerdeString, RegistryURL: r.d.regURL})
	if err != nil {
		return err
	}
	got := map[string]int64{}
	for part, end := range s.hw[p.outputs[0]] {
		recs, err := r.d.readPartition(ctx, p.outputs[0], part, 0, end, true)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			if rec.Attrs.IsControl() {
				continue
			}
			v, err := dec.Decode(ctx, p.outputs[0], false, rec.Value)
			if err != nil {
				return fmt.Errorf("app %s: decode its output %s/%d@%d: %w", p.name, p.outputs[0], part, rec.Offset, err)
			}
			m, _ := v.(map[string]any)
			n, _ := strconv.ParseInt(fmt.Sprint(m["amount"]), 10, 64)
			got[string(rec.Key)] = n
		}
	}
	var bad []string
	for k, w := range want {
		if got[k] != w {
			bad = append(bad, fmt.Sprintf("%s: %d, want %d", k, got[k], w))
		}
	}
	if len(bad) > 0 || len(got) != len(want) {
		slices.Sort(bad)
		return fmt.Errorf("app %s: its own output is not the fold of its input (%d keys, %d expected): %v", p.name, len(got), len(want), head(bad, 5))
	}
	r.truth.Formats.Sums[p.name] = len(want)
	return nil
}

// fmtAudit audits app p live with its spec and with --app-id alone, and its capture with both;
// every audit must say the same (the verdict and the loss and anomaly findings), and check must
// accept it. The live audits are kept for the log-dir audit.
func (r *scRun) fmtAudit(ctx context.Context, p *appProc, phase string, check func(kauditReport) error) error {
	dir := filepath.Join(p.dir, phase)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	describe, err := os.ReadFile(filepath.Join(p.dir, "describe.txt"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "describe.txt"), describe, 0o644); err != nil {
		return err
	}
	spec := filepath.Join(r.d.root, "formats", p.name+".kaudit.yaml")
	type audit struct {
		name string
		rep  kauditReport
	}
	var audits []audit
	// live, with the spec and with --app-id alone
	rep, err := r.d.runDiffFor(ctx, dir, p.appID, spec)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(dir, "kaudit.json"))
	if err != nil {
		return err
	}
	r.lives = append(r.lives, &liveDiff{report: b, dir: dir, app: p.appID, spec: spec, tag: phase})
	audits = append(audits, audit{"live, spec", rep})
	aloneDir := filepath.Join(dir, "app-id")
	if err := os.MkdirAll(aloneDir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(aloneDir, "describe.txt"), describe, 0o644); err != nil {
		return err
	}
	out := filepath.Join(aloneDir, "kaudit.json")
	code, stderr, err := r.d.runKaudit(ctx, aloneDir, "diff-app-id", "diff", "--bootstrap-server", r.d.bootstrap, "--app-id", p.appID,
		"--topology", filepath.Join(aloneDir, "describe.txt"), "--schema-registry-url", r.d.regURL,
		"--save-spec", filepath.Join(aloneDir, "kaudit-inferred.yaml"), "--format", "json", "--output", out)
	if err != nil {
		return err
	}
	if b, err = os.ReadFile(out); err != nil {
		return fmt.Errorf("kaudit diff --app-id %s exited %d without JSON: %s", p.appID, code, lastLines(stderr, 5))
	}
	var alone kauditReport
	if err := json.Unmarshal(b, &alone); err != nil {
		return err
	}
	r.lives = append(r.lives, &liveDiff{report: b, dir: aloneDir, app: p.appID, noSpec: true, tag: phase})
	audits = append(audits, audit{"live, --app-id alone", alone})
	// the capture, offline, with the spec and with --app-id alone
	bundle := filepath.Join(dir, "capture")
	code, stderr, err = r.d.runKaudit(ctx, dir, "capture", "capture", "--app-id", p.appID, "--bootstrap-server", r.d.bootstrap,
		"--schema-registry-url", r.d.regURL, "--topology", filepath.Join(dir, "describe.txt"), "--out", bundle)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("kaudit capture of %s exited %d: %s", p.appID, code, lastLines(stderr, 5))
	}
	if rep, err = r.d.snapshotDiff(ctx, dir, "diff-capture-spec", bundle, "--spec", spec); err != nil {
		return err
	}
	audits = append(audits, audit{"capture, spec", rep})
	if rep, err = r.d.snapshotDiff(ctx, dir, "diff-capture-app-id", bundle, "--app-id", p.appID); err != nil {
		return err
	}
	audits = append(audits, audit{"capture, --app-id alone", rep})
	first := audits[0]
	var errs []error
	for _, a := range audits {
		r.truth.Formats.Kaudit = append(r.truth.Formats.Kaudit, fmt.Sprintf("%s %s %s: %s", p.name, phase, a.name, a.rep.summary()))
		if a.rep.Summary.Verdict != first.rep.Summary.Verdict || !slices.Equal(a.rep.lossIDs(), first.rep.lossIDs()) {
			errs = append(errs, fmt.Errorf("app %s %s: %s says %s, %s says %s", p.name, phase, a.name, a.rep.summary(), first.name, first.rep.summary()))
		}
		if err := check(a.rep); err != nil {
			errs = append(errs, fmt.Errorf("app %s %s, %s: %w", p.name, phase, a.name, err))
		}
		if n := len(a.rep.byCause("undecodable")); n > 0 {
			errs = append(errs, fmt.Errorf("app %s %s, %s: %d records undecodable", p.name, phase, a.name, n))
		}
	}
	logf("formats: app %s %s: %s (live and capture, spec and --app-id alone alike)", p.name, phase, first.rep.summary())
	return allErrs(errs...)
}

// scenarioFormats: the Python client writes 240 Protobuf, JSON Schema and Avro orders; the two
// apps fold them and stop; every audit is clean and every record decodes (kaudit ledger); the
// log dirs say the same. Then 60 orders more with the apps down and the first 8 unconsumed
// records of partition 0 of each app's source deleted: retention-gap, exactly those, in every
// audit, and from the log dirs.
func scenarioFormats(ctx context.Context, r *scRun) error {
	t := &formatsTruth{Produced: map[string]int{}, Gaps: map[string]any{}, Ledger: map[string]int{}, Sums: map[string]int{}}
	r.truth.Formats = t
	adm, closeFn, err := r.d.admin()
	if err != nil {
		return err
	}
	res, err := adm.CreateTopics(ctx, fmtPartitions, int16(r.d.brokers), nil, fmtProtoOrders, fmtProtoTotals, fmtJSONOrders, fmtJSONTotals, fmtAvroOrders)
	closeFn()
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return fmt.Errorf("create the formats topics: %w", err)
	}
	md, err := r.d.fmtDescriptors(filepath.Join(r.dir, "orders.fds"))
	if err != nil {
		return err
	}
	wave1 := fmtOrders(0, 240)
	for _, rec := range wave1 {
		if rec.Value["orderId"] == nil {
			t.NullKeys++
		}
	}
	// the Java serde against the Python serializer, before either wrote anything else
	if err := r.fmtSameBytes(ctx, md, wave1[:40]); err != nil {
		return err
	}
	r.multi = &appsRun{}
	for _, a := range fmtApps {
		p := &appProc{stepsApp: a, dir: filepath.Join(r.dir, a.name), stateDir: filepath.Join(r.stateDir, a.name), truth: &appTruth{AppID: a.appID}}
		if err := os.MkdirAll(p.dir, 0o755); err != nil {
			return err
		}
		p.props = []string{"descriptors.file=" + filepath.Join(r.dir, "orders.fds"),
			"json.schema.file=" + filepath.Join(r.d.root, "formats", "order.schema.json")}
		r.multi.procs = append(r.multi.procs, p)
	}
	ps := r.multi.procs
	for _, x := range []struct{ format, topic string }{{"protobuf", fmtProtoOrders}, {"json", fmtJSONOrders}, {"avro", fmtAvroOrders}} {
		if _, err := r.fmtProduce(ctx, x.format, x.topic, wave1); err != nil {
			return err
		}
	}
	if err := r.startProcs(ctx, ps); err != nil {
		return err
	}
	states, err := r.waitCaughtUp(ctx, ps)
	if err != nil {
		return err
	}
	if err := r.stopProcs(ps); err != nil {
		return err
	}
	for _, p := range ps {
		if err := r.fmtCheckSums(ctx, p, wave1, states[p.name]); err != nil {
			return err
		}
	}
	// kaudit ledger decodes every record each of the Python serializers wrote
	s, err := r.d.observeApp(ctx, "kaudit-formats-protobuf", []string{fmtProtoOrders, fmtJSONOrders, fmtAvroOrders})
	if err != nil {
		return err
	}
	for _, x := range []struct{ topic, serde string }{{fmtProtoOrders, "protobuf"}, {fmtJSONOrders, "json-schema"}, {fmtAvroOrders, "avro"}} {
		if err := r.fmtLedger(ctx, x.topic, x.serde, s.hw[x.topic]); err != nil {
			return err
		}
	}
	clean := func(rep kauditReport) error {
		if rep.Summary.Verdict != "clean" {
			return fmt.Errorf("verdict %s, want clean", rep.summary())
		}
		return nil
	}
	for _, p := range ps {
		if err := r.fmtAudit(ctx, p, "clean", clean); err != nil {
			return err
		}
	}
	// the clean audits from the log dirs (the cluster stopped, then started again)
	if err := r.auditLogDirsNow(ctx, "clean"); err != nil {
		return err
	}
	// the retention gap: 60 orders more, the apps down, the first unconsumed records deleted
	wave2 := fmtOrders(240, 60)
	for _, x := range []struct{ format, topic string }{{"protobuf", fmtProtoOrders}, {"json", fmtJSONOrders}} {
		if _, err := r.fmtProduce(ctx, x.format, x.topic, wave2); err != nil {
			return err
		}
	}
	type gap struct {
		topic    string
		from, to int64
	}
	gaps := map[string]gap{}
	for _, p := range ps {
		s, err := p.observe(ctx, r.d)
		if err != nil {
			return err
		}
		topic := p.sources[0]
		c, _ := s.committed.get(topic, 0)
		hw, _ := s.hw.get(topic, 0)
		if hw-c < fmtGap {
			return fmt.Errorf("%s/0 has only %d unconsumed records, need %d", topic, hw-c, fmtGap)
		}
		if err := r.d.deleteRecords(ctx, topic, 0, c+fmtGap); err != nil {
			return err
		}
		gaps[p.name] = gap{topic, c, c + fmtGap}
		t.Gaps[p.name] = fmt.Sprintf("%s/0 [%d, %d)", topic, c, c+fmtGap)
	}
	for _, p := range ps {
		g := gaps[p.name]
		check := func(rep kauditReport) error {
			return allErrs(expectVerdict(rep, "loss"), expectOnlyLossCauses(rep, "retention-gap"),
				expectRange("retention-gap", rep.byCause("retention-gap"), g.topic, 0, g.from, g.to))
		}
		if err := r.fmtAudit(ctx, p, "retention-gap", check); err != nil {
			return err
		}
	}
	return nil // runAttempt audits the log dirs against the retention-gap audits
}
