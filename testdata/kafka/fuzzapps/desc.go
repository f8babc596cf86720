// Package fuzzapps generates Kafka Streams apps for kaudit's real drill (issue AB): from a
// seed, a description of a random valid topology (Desc, which the Java interpreter
// kaudit.drill.GenApp builds with Kafka Streams 3.6.2), the kaudit spec its team would write
// from it (Spec, the oracle), its input (Records) and a fault. The drill's harness
// (testdata/kafka/drill/genapps.go) runs the app on a real cluster, injects the fault and
// checks kaudit's reports against what it knows; Shrink makes a failing description smaller.
//
// One Fn means the same thing in three places: the Java interpreter (GenApp.java), Go (Eval,
// here: the records a fault must reach) and the spec's expression (SpecExpr): the unit tests
// check Go against kaudit's own evaluation of the spec.
package fuzzapps

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Serdes of keys and values, as the description, the spec and Java name them.
const (
	SerdeString = "string"
	SerdeJSON   = "json"
	SerdeAvro   = "avro"
	SerdeInt    = "int"
	SerdeLong   = "long"
)

// IsRec reports whether values of serde s are records (the fields id, k, cat, n, amount, text).
func IsRec(s string) bool { return s == SerdeJSON || s == SerdeAvro }

func isNum(s string) bool { return s == SerdeInt || s == SerdeLong }

// RecFields are a record value's fields, in the Avro schema's order (GenRec.avsc).
var RecFields = []string{"id", "k", "cat", "n", "amount", "text"}

// Desc is one generated app: settings, the topology as nodes in build order, the input plan and
// the fault.
type Desc struct {
	Seed       uint64  `json:"seed"`
	AppID      string  `json:"app_id"`
	Guarantee  string  `json:"guarantee"`   // exactly_once_v2 | at_least_once
	CacheBytes int64   `json:"cache_bytes"` // statestore.cache.max.bytes
	CommitMs   int64   `json:"commit_ms"`
	PurgeMs    int64   `json:"purge_ms"` // repartition.purge.interval.ms; 0: Streams' 30 s
	Named      bool    `json:"named"`    // processors, stores and repartition topics named by the app
	Partitions int32   `json:"partitions"`
	Nodes      []*Node `json:"nodes"`
	Input      Input   `json:"input"`
	Fault      string  `json:"fault"`
	// DropIDs are the record ids the app's swallowing node skips (fault dropped), as a
	// processor that catches an exception and returns nothing does.
	DropIDs []string `json:"drop_ids,omitempty"`
}

// Faults the harness injects (one per app; broker-restart hits the whole batch).
const (
	FaultNone           = "none"
	FaultKill9          = "kill9"             // kill -9 while a transaction is open, restart
	FaultRestart        = "restart"           // a clean stop mid-input, restart
	FaultBrokerRestart  = "broker-restart"    // the broker stopped and started mid-input
	FaultSourceGap      = "source-gap"        // DeleteRecords on a source past the committed offset
	FaultRepartitionGap = "repartition-purge" // DeleteRecords on a repartition topic past the committed offset
	FaultDropped        = "dropped"           // the app swallows chosen records
)

// Faults lists every fault.
var Faults = []string{FaultNone, FaultKill9, FaultRestart, FaultBrokerRestart, FaultSourceGap, FaultRepartitionGap, FaultDropped}

// Node is one DSL call. Its output is a KStream, KTable, grouped stream… by Op.
type Node struct {
	ID    string   `json:"id"`
	Op    string   `json:"op"`
	In    []string `json:"in,omitempty"`
	Unit  int      `json:"unit"`           // the unit (family instance) it belongs to
	Name  string   `json:"name,omitempty"` // Named / Materialized / Grouped name, when the app names it
	Topic string   `json:"topic,omitempty"`
	Key   string   `json:"key"`   // serde of the keys it emits
	Value string   `json:"value"` // serde of the values it emits
	Fn    *Fn      `json:"fn,omitempty"`
	Fn2   *Fn      `json:"fn2,omitempty"` // KTable groupBy: the value mapper (nil: the row)
	Preds []Fn     `json:"preds,omitempty"`
	// Default: a split with a default branch; Index: which branch a branch node takes
	// (len(preds): the default).
	Default bool     `json:"default,omitempty"`
	Index   int      `json:"index,omitempty"`
	Reduce  string   `json:"reduce,omitempty"` // latest | sum | max
	Field   string   `json:"field,omitempty"`  // the reducer's field (records)
	Join    string   `json:"join,omitempty"`   // inner | left | outer
	Proj    []string `json:"proj,omitempty"`   // a joiner's field of each side ("": the value)
	Window  *Window  `json:"window,omitempty"`
	Reset   string   `json:"reset,omitempty"` // Consumed reset policy: earliest | latest | "" (the config's)
	// Sources: Tombstones and NullKeys say what the input holds; Late the late records per
	// wave's end (windowed units).
	Tombstones bool `json:"tombstones,omitempty"`
	NullKeys   bool `json:"null_keys,omitempty"`
	// Swallow: this filter or flatMapValues skips the records of Desc.DropIDs.
	Swallow bool `json:"swallow,omitempty"`
}

// Window is a TimeWindows (size, advance, grace) or a SessionWindows (gap = size).
type Window struct {
	SizeMs    int64 `json:"size_ms"`
	AdvanceMs int64 `json:"advance_ms,omitempty"`
	GraceMs   int64 `json:"grace_ms"`
	Session   bool  `json:"session,omitempty"`
}

// Input is what the harness produces: Waves waves of PerWave records per source topic,
// keys from a pool of Keys, event times StepMs apart; Late late records for windowed units
// at the end of each wave.
type Input struct {
	Waves   int   `json:"waves"`
	PerWave int   `json:"per_wave"`
	Keys    int   `json:"keys"`
	StepMs  int64 `json:"step_ms"`
	Late    int   `json:"late"`
	// PastMs puts the input's event times that far in the past (a backfill, events from
	// upstream systems): the records' timestamps end PastMs before the run.
	PastMs int64 `json:"past_ms,omitempty"`
}

// Fn is a lambda: a predicate, a value mapper, a key selector or an adder, by Kind.
type Fn struct {
	Kind  string  `json:"kind"`
	Field string  `json:"field,omitempty"`
	Str   string  `json:"str,omitempty"`
	Num   float64 `json:"num,omitempty"`
	N     int64   `json:"n,omitempty"`
}

// Ops and what they emit.
var opKinds = map[string]string{
	"stream": "stream", "table": "table", "globalTable": "global",
	"filter": "stream", "filterNot": "stream", "mapValues": "stream", "flatMapValues": "stream", "selectKey": "stream",
	"map": "stream", "peek": "stream", "merge": "stream", "split": "split", "branch": "stream",
	"groupByKey": "grouped", "groupBy": "grouped", "windowedBy": "wgrouped",
	"count": "table", "reduce": "table", "aggregate": "table", "suppress": "table", "toStream": "stream", "toTable": "table",
	"to": "sink", "tableJoin": "table", "streamTableJoin": "stream",
	"tableGroupBy": "gtable", "tableCount": "table", "tableAggregate": "table", "tableReduce": "table",
	"cogroup": "table",
	// recognised by kaudit, not modelled by its spec
	"tableFilter": "table", "tableMapValues": "table", "fkJoin": "table", "streamJoin": "stream", "globalJoin": "stream",
}

// Unmodelled are the ops the spec cannot express.
var UnmodelledOps = map[string]bool{"tableFilter": true, "tableMapValues": true, "fkJoin": true, "streamJoin": true, "globalJoin": true}

// ---- values ----

// Rec is a record value: id, k, cat, n, amount, text (k may be nil).
type Rec = map[string]any

func str(v any) (string, bool) { s, ok := v.(string); return s, ok }

func num(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case float64:
		return int64(x), true
	case json.Number:
		n, err := x.Int64()
		return n, err == nil
	}
	return 0, false
}

func field(v any, f string) any {
	if m, ok := v.(map[string]any); ok {
		return m[f]
	}
	return nil
}

func withField(v any, f string, x any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m))
	for k, y := range m {
		out[k] = y
	}
	out[f] = x
	return out
}

// javaRound is Math.round(x * factor) on positive values (ties up, as Go's math.Round for
// positives).
func javaRound(x int64, factor float64) int64 { return int64(math.Floor(float64(x)*factor + 0.5)) }

// Pred applies a predicate to (key, value) as the Java interpreter does: a null value is false.
func (f Fn) Pred(key, v any) bool {
	if v == nil {
		return false
	}
	x := v
	if f.Field != "" {
		x = field(v, f.Field)
	}
	switch f.Kind {
	case "eq":
		s, ok := str(x)
		return ok && s == f.Str
	case "gt":
		n, ok := num(x)
		return ok && n > f.N
	case "even":
		n, ok := num(x)
		return ok && n%2 == 0
	case "has":
		s, ok := str(x)
		return ok && strings.Contains(s, f.Str)
	}
	panic("fuzzapps: predicate kind " + f.Kind)
}

// MapValue applies a value mapper; a null value stays null.
func (f Fn) MapValue(v any) any {
	if v == nil {
		return nil
	}
	switch f.Kind {
	case "scale":
		if f.Field == "" {
			n, _ := num(v)
			return javaRound(n, f.Num)
		}
		n, _ := num(field(v, f.Field))
		return withField(v, f.Field, javaRound(n, f.Num))
	case "add":
		if f.Field == "" {
			n, _ := num(v)
			return n + f.N
		}
		n, _ := num(field(v, f.Field))
		return withField(v, f.Field, n+f.N)
	case "copy":
		return withField(v, f.Field, field(v, f.Str))
	case "upper":
		if f.Field == "" {
			s, _ := str(v)
			return strings.ToUpper(s)
		}
		s, ok := str(field(v, f.Field))
		if !ok {
			return v
		}
		return withField(v, f.Field, strings.ToUpper(s))
	}
	panic("fuzzapps: mapper kind " + f.Kind)
}

// FlatMap applies a flatMapValues function; a null value gives nothing.
func (f Fn) FlatMap(v any) []any {
	if v == nil {
		return nil
	}
	switch f.Kind {
	case "split":
		if f.Field == "" {
			s, _ := str(v)
			var out []any
			for _, w := range strings.Split(s, " ") {
				out = append(out, w)
			}
			return out
		}
		s, _ := str(field(v, f.Field))
		var out []any
		for _, w := range strings.Split(s, " ") {
			out = append(out, withField(v, f.Field, w))
		}
		return out
	case "pair":
		n, _ := num(v)
		return []any{n, n + 1}
	}
	panic("fuzzapps: flatMap kind " + f.Kind)
}

// SelectKey applies a key selector (selectKey, groupBy, map's key, a foreign key).
func (f Fn) SelectKey(key, v any) any {
	switch f.Kind {
	case "field":
		if v == nil {
			return nil
		}
		return field(v, f.Field)
	case "upperkey":
		s, ok := str(key)
		if !ok {
			return nil
		}
		return strings.ToUpper(s)
	case "mod":
		n, ok := num(key)
		if !ok {
			return nil
		}
		return n % f.N
	case "firstword":
		s, ok := str(v)
		if !ok {
			return nil
		}
		return strings.Split(s, " ")[0]
	}
	panic("fuzzapps: key kind " + f.Kind)
}

// ---- the spec's expressions ----

// guard wraps body for a value that may be null, as the code's null check reads.
func guardPred(body string, nullable bool) string {
	if nullable {
		return "value != nil && " + body
	}
	return body
}

func guardMap(body string, nullable bool, none string) string {
	if nullable {
		return "value == nil ? " + none + " : " + body
	}
	return body
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func fmtNum(x float64) string {
	s := fmt.Sprintf("%g", x)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// PredExpr is the predicate as the spec writes it.
func (f Fn) PredExpr(nullable bool) string {
	x := "value"
	if f.Field != "" {
		x = "value." + f.Field
	}
	var body string
	switch f.Kind {
	case "eq":
		body = x + " == " + quote(f.Str)
	case "gt":
		body = fmt.Sprintf("%s > %d", x, f.N)
	case "even":
		body = x + " % 2 == 0"
	case "has":
		body = x + " contains " + quote(f.Str)
	}
	return guardPred(body, nullable)
}

// recLiteral is a record's literal with field f replaced by expr (the other fields copied).
func recLiteral(f, expr, from string) string {
	var parts []string
	for _, name := range RecFields {
		v := from + "." + name
		if name == f {
			v = expr
		}
		parts = append(parts, quote(name)+": "+v)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// MapExpr is the value mapper as the spec writes it.
func (f Fn) MapExpr(nullable bool) string {
	var body string
	if f.Field == "" {
		switch f.Kind {
		case "scale":
			body = "round(value * " + fmtNum(f.Num) + ")"
		case "add":
			body = fmt.Sprintf("value + %d", f.N)
		case "upper":
			body = "upper(value)"
		}
		return guardMap(body, nullable, "nil")
	}
	x := "value." + f.Field
	switch f.Kind {
	case "scale":
		body = recLiteral(f.Field, "round("+x+" * "+fmtNum(f.Num)+")", "value")
	case "add":
		body = recLiteral(f.Field, fmt.Sprintf("%s + %d", x, f.N), "value")
	case "copy":
		body = recLiteral(f.Field, "value."+f.Str, "value")
	case "upper":
		body = recLiteral(f.Field, "upper("+x+")", "value")
	}
	return guardMap(body, nullable, "nil")
}

// FlatExpr is the flatMapValues function as the spec writes it.
func (f Fn) FlatExpr(nullable bool) string {
	var body string
	switch {
	case f.Kind == "pair":
		body = "[value, value + 1]"
	case f.Field == "":
		body = `split(value, " ")`
	default:
		body = `map(split(value.` + f.Field + `, " "), (` + recLiteral(f.Field, "#", "value") + `))`
	}
	return guardMap(body, nullable, "[]")
}

// KeyExpr is the key selector as the spec writes it.
func (f Fn) KeyExpr(nullable, nullKeys bool) string {
	switch f.Kind {
	case "field":
		if nullable {
			return "value?." + f.Field
		}
		return "value." + f.Field
	case "upperkey":
		if nullKeys {
			return "key == nil ? nil : upper(key)"
		}
		return "upper(key)"
	case "mod":
		return fmt.Sprintf("key %% %d", f.N)
	case "firstword":
		return guardMap(`split(value, " ")[0]`, nullable, "nil")
	}
	panic("fuzzapps: key kind " + f.Kind)
}

// ---- the description's shape ----

// Node returns the node with id, or nil.
func (d *Desc) Node(id string) *Node {
	for _, n := range d.Nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// Sources are the source nodes (stream, table, globalTable), in build order.
func (d *Desc) Sources() []*Node {
	var out []*Node
	for _, n := range d.Nodes {
		if n.Op == "stream" || n.Op == "table" || n.Op == "globalTable" {
			out = append(out, n)
		}
	}
	return out
}

// Outputs are the topics the app writes (its to() nodes), sorted.
func (d *Desc) Outputs() []string {
	var out []string
	for _, n := range d.Nodes {
		if n.Op == "to" {
			out = append(out, n.Topic)
		}
	}
	sort.Strings(out)
	return out
}

// Users lists the nodes that read node id.
func (d *Desc) Users(id string) []*Node {
	var out []*Node
	for _, n := range d.Nodes {
		for _, in := range n.In {
			if in == id {
				out = append(out, n)
				break
			}
		}
	}
	return out
}

// Families names the operator families and settings the app covers (for the drill's figures).
func (d *Desc) Families() []string {
	set := map[string]bool{}
	for _, n := range d.Nodes {
		switch n.Op {
		case "filter", "filterNot":
			set["filter"] = true
		case "mapValues", "flatMapValues", "peek", "map", "selectKey", "merge", "split", "groupBy":
			set[n.Op] = true
		case "windowedBy":
			switch {
			case n.Window.Session:
				set["session-window"] = true
			case n.Window.AdvanceMs > 0 && n.Window.AdvanceMs < n.Window.SizeMs:
				set["hopping-window"] = true
			default:
				set["tumbling-window"] = true
			}
		case "count", "aggregate", "cogroup", "tableJoin", "streamTableJoin", "tableGroupBy", "toTable", "suppress",
			"tableFilter", "tableMapValues", "fkJoin", "streamJoin", "globalJoin":
			set[n.Op] = true
		case "reduce":
			set["reduce-"+n.Reduce] = true
		case "table":
			set["table"] = true
		case "stream":
			set["source-"+n.Value] = true
			if n.Key != SerdeString {
				set["key-"+n.Key] = true
			}
			if n.Tombstones {
				set["tombstones"] = true
			}
			if n.NullKeys {
				set["null-keys"] = true
			}
			if n.Reset != "" {
				set["reset-"+n.Reset] = true
			}
		}
		if n.Op == "tableJoin" {
			set["join-"+n.Join] = true
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Settings names the app's settings (for the drill's figures).
func (d *Desc) Settings() []string {
	out := []string{d.Guarantee, fmt.Sprintf("partitions-%d", d.Partitions), "fault-" + d.Fault}
	if d.CacheBytes == 0 {
		out = append(out, "cache-off")
	} else {
		out = append(out, "cache-on")
	}
	if d.Named {
		out = append(out, "named")
	}
	if d.PurgeMs == 0 {
		out = append(out, "purge-default")
	}
	out = append(out, fmt.Sprintf("commit-%dms", d.CommitMs))
	if d.Input.PastMs > 0 {
		out = append(out, "event-time-past")
	}
	return out
}

// Clone is a deep copy of d.
func (d *Desc) Clone() *Desc {
	b, err := json.Marshal(d)
	if err != nil {
		panic(err)
	}
	var out Desc
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return &out
}
