package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
)

// StepKind is one stateless operator of the Kafka Streams DSL, as a
// table's steps name it.
type StepKind string

const (
	StepFilter        StepKind = "filter"        // KStream#filter: keep when true
	StepFilterNot     StepKind = "filterNot"     // KStream#filterNot: keep when false
	StepMapValues     StepKind = "mapValues"     // KStream#mapValues: a new value
	StepMap           StepKind = "map"           // KStream#map: [newKey, newValue]
	StepFlatMapValues StepKind = "flatMapValues" // KStream#flatMapValues: a list of values
	StepFlatMap       StepKind = "flatMap"       // KStream#flatMap: a list of [key, value]
	StepPeek          StepKind = "peek"          // KStream#peek: no effect on the records
	StepBranch        StepKind = "branch"        // split().branch(…): true for the records of this branch
	StepSelectKey     StepKind = "selectKey"     // KStream#selectKey: a new key
	StepGroupBy       StepKind = "groupBy"       // KStream#groupBy: a new key (selectKey, then grouped)
	// StepProcess is a Processor API node (process, processValues,
	// transform, transformValues, flatTransform…): kaudit cannot know what
	// it does, so a table through one is not judged.
	StepProcess StepKind = "process"
)

// stepKinds lists the kinds in the order the docs give them.
var stepKinds = []StepKind{StepFilter, StepFilterNot, StepMapValues, StepMap, StepFlatMapValues, StepFlatMap,
	StepPeek, StepBranch, StepSelectKey, StepGroupBy, StepProcess}

// StepKinds lists every kind a step can have.
func StepKinds() []StepKind { return append([]StepKind(nil), stepKinds...) }

// KeyChanging reports whether the step may change the record's key, so
// that Kafka Streams repartitions before the next grouping.
func (k StepKind) KeyChanging() bool {
	switch k {
	case StepMap, StepFlatMap, StepSelectKey, StepGroupBy, StepProcess:
		return true
	}
	return false
}

// rekeyed reports whether a select_key or a step changes the records'
// keys before their grouping: Kafka Streams then repartitions them.
func rekeyed(selectKey string, steps []*Step) bool {
	return selectKey != "" || slices.ContainsFunc(steps, func(st *Step) bool { return st != nil && st.Kind.KeyChanging() })
}

// ValueChanging reports whether the step may change the record's value.
func (k StepKind) ValueChanging() bool {
	switch k {
	case StepMapValues, StepMap, StepFlatMapValues, StepFlatMap, StepProcess:
		return true
	}
	return false
}

// needsExpr reports whether a step of the kind takes an expression.
func (k StepKind) needsExpr() bool { return k != StepPeek && k != StepProcess }

// Step is one stateless processor of a table's chain: its kind, its
// lambda as an expression over key, value, headers and timestamp, and the
// topology node it stands for when the spec names it (an app's
// Named.as). A step whose expression is TODO, or Unknown, is not
// evaluated: the table is not judged until it is answered.
type Step struct {
	Kind StepKind
	Expr string
	Node string
	Line int // its line in the spec; 0 for a spec built in code
	// Unknown says, for a step built in code (UnknownStep: a draft's), why
	// its expression is not known; "" when it is.
	Unknown string
	prog    *vm.Program
	bad     string
}

// TODO reports whether the step is still to be answered, or cannot be
// modelled (a Processor API node).
func (s *Step) TODO() bool { return s.Kind == StepProcess || s.unanswered() }

// unanswered reports whether the step's expression is not known: TODO in
// a spec, Unknown in one built in code.
func (s *Step) unanswered() bool { return s.Unknown != "" || isTODO(s.Expr) }

func (s *Step) String() string {
	out := string(s.Kind)
	switch {
	case s.Unknown != "":
		out += " (not known: " + s.Unknown + ")"
	case s.Expr != "":
		out += ": " + s.Expr
	}
	if s.Node != "" {
		out += " (node " + s.Node + ")"
	}
	return out
}

// UnmarshalYAML reads a step: a bare kind (peek, process), or a mapping
// of one kind to its expression, with an optional node.
func (s *Step) UnmarshalYAML(unmarshal func(any) error) error {
	var word string
	if err := unmarshal(&word); err == nil {
		s.Kind = StepKind(strings.TrimSpace(word))
		return nil
	}
	var m map[string]any
	if err := unmarshal(&m); err != nil {
		s.bad = "want a mapping such as {filter: EXPR} (or the word peek)"
		return nil
	}
	for k, v := range m {
		var text string
		switch x := v.(type) {
		case string:
			text = x
		case nil:
		case map[string]any, []any:
			s.bad = fmt.Sprintf("%s: want an expression", k)
			return nil
		default:
			text = fmt.Sprint(x)
		}
		if k == "node" {
			s.Node = strings.TrimSpace(text)
			continue
		}
		if s.Kind != "" {
			s.bad = fmt.Sprintf("two operators (%s and %s) in one step: write one step each", s.Kind, k)
			return nil
		}
		s.Kind, s.Expr = StepKind(k), strings.TrimSpace(text)
	}
	if s.Kind == "" {
		s.bad = "no operator: want one of " + kindList()
	}
	return nil
}

// MarshalYAML writes the step back as the spec says it.
func (s Step) MarshalYAML() (any, error) {
	if !s.Kind.needsExpr() && s.Expr == "" && s.Node == "" {
		return string(s.Kind), nil
	}
	m := map[string]string{string(s.Kind): s.Expr}
	if s.Node != "" {
		m["node"] = s.Node
	}
	return m, nil
}

func kindList() string {
	var names []string
	for _, k := range stepKinds {
		names = append(names, string(k))
	}
	return strings.Join(names, ", ")
}

// compileStep checks a step's kind and compiles its expression.
func compileStep(st *Step) error {
	if st.bad != "" {
		return errors.New(st.bad)
	}
	known := false
	for _, k := range stepKinds {
		known = known || k == st.Kind
	}
	if !known {
		return fmt.Errorf("unknown operator %q: want one of %s", st.Kind, kindList())
	}
	switch {
	case st.Kind == StepProcess || st.unanswered():
		return nil // not evaluated: the table is not judged
	case !st.Kind.needsExpr() && st.Expr != "":
		return fmt.Errorf("%s takes no expression", st.Kind)
	case st.Kind.needsExpr() && st.Expr == "":
		return fmt.Errorf("%s needs an expression (or TODO)", st.Kind)
	case !st.Kind.needsExpr():
		return nil
	}
	prog, err := compile(st.Expr, recordEnv())
	if err != nil {
		return err
	}
	st.prog = prog
	return nil
}

// Element is one record a table's steps emit for an input: what reaches
// the repartition topic, or the store when nothing repartitions. Its
// timestamp is the input's: every stateless operator keeps it.
type Element struct {
	Key   any
	Value any
	// Unsure says the element passed a filter or branch whose predicate
	// the spec leaves TODO (ApplyUnsure): whether the app kept it is not
	// known from the spec; its copy, where one exists, says it did.
	Unsure bool
}

// StepError is a step whose expression failed on a record, or that cannot
// be evaluated: what it concerns cannot be judged.
type StepError struct {
	Index int // the step's index in the chain
	Step  *Step
	Err   error
}

func (e *StepError) Error() string {
	name := string(e.Step.Kind)
	if e.Step.Node != "" {
		name += " " + e.Step.Node
	}
	return fmt.Sprintf("step %d (%s): %v", e.Index+1, name, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// ErrNotModelled is wrapped by a StepError for a step kaudit does not
// evaluate: a TODO, or a Processor API node.
var ErrNotModelled = errors.New("not modelled")

// runSteps runs a chain of steps on one record; an empty result is a
// record the chain filters out (a filter, a branch, an empty flatMap).
func runSteps(steps []*Step, r RecordEnv) ([]Element, error) { return runStepsUnsure(steps, r, false) }

// runStepsUnsure is runSteps; with unsure, a filter or branch left TODO
// passes every element, marked Unsure, instead of failing.
func runStepsUnsure(steps []*Step, r RecordEnv, unsure bool) ([]Element, error) {
	cur := []Element{{Key: r.Key, Value: r.Value}}
	for i, st := range steps {
		if len(cur) == 0 {
			return nil, nil
		}
		if unsure && st.unknownPredicate() {
			for j := range cur {
				cur[j].Unsure = true
			}
			continue
		}
		if st.TODO() {
			return nil, &StepError{Index: i, Step: st, Err: ErrNotModelled}
		}
		next := cur[:0:0]
		for _, e := range cur {
			out, err := st.apply(RecordEnv{Key: e.Key, Value: e.Value, Headers: r.Headers, Timestamp: r.Timestamp})
			if err != nil {
				return nil, &StepError{Index: i, Step: st, Err: err}
			}
			for k := range out {
				out[k].Unsure = e.Unsure
			}
			next = append(next, out...)
		}
		cur = next
	}
	return cur, nil
}

// unknownPredicate reports whether the step only keeps or drops records
// (a filter, filterNot or branch) and its predicate is TODO.
func (s *Step) unknownPredicate() bool {
	switch s.Kind {
	case StepFilter, StepFilterNot, StepBranch:
		return s.unanswered()
	}
	return false
}

// apply runs one step on one record.
func (st *Step) apply(r RecordEnv) ([]Element, error) {
	if st.Kind == StepPeek {
		return []Element{{Key: r.Key, Value: r.Value}}, nil
	}
	out, err := expr.Run(st.prog, r.env())
	if err != nil {
		return nil, err
	}
	switch st.Kind {
	case StepFilter, StepFilterNot, StepBranch:
		b, ok := out.(bool)
		if !ok {
			return nil, fmt.Errorf("the predicate gave %s, not true or false", describe(out))
		}
		if b == (st.Kind == StepFilterNot) {
			return nil, nil
		}
		return []Element{{Key: r.Key, Value: r.Value}}, nil
	case StepMapValues:
		v, err := fromExpr(out)
		if err != nil {
			return nil, err
		}
		return []Element{{Key: r.Key, Value: v}}, nil
	case StepSelectKey, StepGroupBy:
		k, err := fromExpr(out)
		if err != nil {
			return nil, err
		}
		return []Element{{Key: k, Value: r.Value}}, nil
	case StepMap:
		e, err := pair(out)
		if err != nil {
			return nil, err
		}
		return []Element{e}, nil
	case StepFlatMapValues, StepFlatMap:
		list, ok := asList(out)
		if !ok {
			if out == nil {
				// Java iterates the mapper's result: null throws
				return nil, errors.New("the mapper gave null, not a list (Kafka Streams throws a NullPointerException)")
			}
			return nil, fmt.Errorf("the mapper gave %s, not a list", describe(out))
		}
		els := make([]Element, 0, len(list))
		for i, x := range list {
			if st.Kind == StepFlatMap {
				e, err := pair(x)
				if err != nil {
					return nil, fmt.Errorf("element %d: %w", i, err)
				}
				els = append(els, e)
				continue
			}
			v, err := fromExpr(x)
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
			els = append(els, Element{Key: r.Key, Value: v})
		}
		return els, nil
	}
	return nil, fmt.Errorf("%s cannot be evaluated", st.Kind)
}

// pair reads a map or flatMap result: a list [key, value] (KeyValue.pair).
func pair(out any) (Element, error) {
	l, ok := asList(out)
	if !ok || len(l) != 2 {
		if out == nil {
			return Element{}, errors.New("the mapper gave null (Kafka Streams throws: \"The provided KeyValueMapper returned null which is not allowed.\")")
		}
		return Element{}, fmt.Errorf("the mapper gave %s, not a pair [key, value]", describe(out))
	}
	k, err := fromExpr(l[0])
	if err != nil {
		return Element{}, fmt.Errorf("key: %w", err)
	}
	v, err := fromExpr(l[1])
	if err != nil {
		return Element{}, fmt.Errorf("value: %w", err)
	}
	return Element{Key: k, Value: v}, nil
}

// asList reads an expression's list result: []any, or a slice of any
// other element type (expr-lang's split gives []string).
func asList(v any) ([]any, bool) {
	if l, ok := v.([]any); ok {
		return l, true
	}
	rv := reflect.ValueOf(v)
	if v == nil || (rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array) {
		return nil, false
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}

// describe names a value in an error: its type and, briefly, itself.
func describe(v any) string {
	if v == nil {
		return "null"
	}
	s := fmt.Sprint(v)
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return fmt.Sprintf("%T %s", v, s)
}

// validateSteps compiles a table's steps and output steps, each error
// naming its line.
func (s *Spec) validateSteps(l *errList, path, field string, t *TableSpec) {
	for _, list := range []struct {
		name  string
		steps []*Step
	}{{"steps", t.Steps}, {"table_steps", t.TableSteps}, {"output_steps", t.OutputSteps}} {
		for i, st := range list.steps {
			p := fmt.Sprintf("%s.%s[%d]", path, list.name, i)
			f := fmt.Sprintf("%s.%s[%d]", field, list.name, i)
			if st == nil {
				l.add(p, f, "empty step: want one of %s", kindList())
				continue
			}
			st.Line = s.line(p)
			if err := compileStep(st); err != nil {
				l.add(p, f, "%v", err)
				continue
			}
			if list.name == "table_steps" && st.Kind != StepFilter && st.Kind != StepFilterNot && st.Kind != StepMapValues {
				l.add(p, f, "table_steps holds KTable#filter, filterNot and mapValues only, not %s", st.Kind)
				continue
			}
			if list.name == "steps" && t.SelectKeyExpr != "" && st.Kind.KeyChanging() && st.Kind != StepProcess {
				l.add(p, f, "select_key is the last selectKey step: give the key in steps or in select_key, not both")
			}
		}
	}
	t.chain = nil
	if t.SelectKeyExpr != "" && t.selectKey != nil {
		t.chain = append(t.chain, t.Steps...)
		t.chain = append(t.chain, &Step{Kind: StepSelectKey, Expr: t.SelectKeyExpr, Line: s.lineOr(path+".select_key", t.Line), prog: t.selectKey})
	} else if len(t.Steps) > 0 {
		t.chain = t.Steps
	}
}

// Chain is the table's steps with select_key as a last selectKey step:
// every processor between the source and the store the spec states.
func (t *TableSpec) Chain() []*Step { return t.chain }

// HasSteps reports whether the table states steps beyond select_key.
func (t *TableSpec) HasSteps() bool { return len(t.Steps) > 0 }

// ValueChanging reports whether the table's steps may change a record's
// value (or emit several), so that its copies are not the inputs' values.
func (t *TableSpec) ValueChanging() bool {
	for _, st := range t.Steps {
		if st.Kind.ValueChanging() {
			return true
		}
	}
	return false
}

// Flat reports whether the table's steps may emit several elements for
// one input (flatMap, flatMapValues).
func (t *TableSpec) Flat() bool {
	for _, st := range t.Steps {
		if st.Kind == StepFlatMap || st.Kind == StepFlatMapValues {
			return true
		}
	}
	return false
}

// NotModelled lists the steps of the table (output steps included) that
// are TODO or Processor API nodes: what passes them cannot be judged.
func (t *TableSpec) NotModelled() []*Step {
	var out []*Step
	for _, st := range append(append(append([]*Step(nil), t.Steps...), t.TableSteps...), t.OutputSteps...) {
		if st != nil && st.TODO() {
			out = append(out, st)
		}
	}
	return out
}

// Apply runs the table's chain on one input record: the elements it
// emits, in order (the key of each is the table key). No element is an
// input the chain filters out. A *StepError names the step that failed or
// is not modelled.
func (t *TableSpec) Apply(r RecordEnv) ([]Element, error) {
	if len(t.Steps) == 0 {
		k, err := t.SelectKey(r)
		if err != nil {
			return nil, err
		}
		return []Element{{Key: k, Value: r.Value}}, nil
	}
	return runSteps(t.chain, r)
}

// UnknownPredicates lists the table's steps that only keep or drop
// records and whose predicate is TODO, when they are all of its steps
// that cannot be evaluated (nil otherwise): with a repartition topic, the
// copies tell which inputs such a step kept (ApplyUnsure).
func (t *TableSpec) UnknownPredicates() []*Step {
	var out []*Step
	for _, st := range t.Steps {
		switch {
		case st == nil:
		case st.unknownPredicate():
			out = append(out, st)
		case st.TODO():
			return nil
		}
	}
	return out
}

// ApplyUnsure is Apply passing the records a filter or branch with a TODO
// predicate would judge, each marked Unsure (UnknownPredicates).
func (t *TableSpec) ApplyUnsure(r RecordEnv) ([]Element, error) {
	if len(t.Steps) == 0 {
		return t.Apply(r)
	}
	return runStepsUnsure(t.chain, r, true)
}

// OutputKeyChanging reports whether the output steps may change the key
// (map, selectKey, flatMap…): the output is then not keyed by the table.
func (t *TableSpec) OutputKeyChanging() bool {
	for _, st := range t.OutputSteps {
		if st.Kind.KeyChanging() {
			return true
		}
	}
	return false
}

// OutputRekeyNotModelled is the first output step that changes the key in
// a way the output's judgement cannot follow: a map or selectKey gives each
// state's output its key (the output then is judged by it, where the keys
// map one to one); a flatMap, groupBy or Processor API node does not.
func (t *TableSpec) OutputRekeyNotModelled() *Step {
	for _, st := range t.OutputSteps {
		if st.Kind.KeyChanging() && st.Kind != StepMap && st.Kind != StepSelectKey {
			return st
		}
	}
	return nil
}

// ApplyOutput runs the table steps, then the output steps, on one state
// of the table (key, value, its timestamp): what
// toStream()…to(output) writes of it.
func (t *TableSpec) ApplyOutput(r RecordEnv) ([]Element, error) {
	if len(t.TableSteps) > 0 {
		v, err := runTableSteps(t.TableSteps, r)
		if err != nil {
			return nil, err
		}
		r.Value = v
	}
	if len(t.OutputSteps) == 0 {
		return []Element{{Key: r.Key, Value: r.Value}}, nil
	}
	return runSteps(t.OutputSteps, r)
}

// runTableSteps is the KTable operations on one state (KTableFilter,
// KTableMapValues of Kafka Streams 3.6, not materialized, without old
// values): a filter forwards the state where its predicate holds and a
// null (a tombstone downstream) where it does not; mapValues maps a state,
// and a null stays null.
func runTableSteps(steps []*Step, r RecordEnv) (any, error) {
	v := r.Value
	for i, st := range steps {
		if st.TODO() {
			return nil, &StepError{Index: i, Step: st, Err: ErrNotModelled}
		}
		if v == nil {
			continue // a tombstone passes every KTable operation as one
		}
		out, err := st.apply(RecordEnv{Key: r.Key, Value: v, Headers: r.Headers, Timestamp: r.Timestamp})
		if err != nil {
			return nil, &StepError{Index: i, Step: st, Err: err}
		}
		switch {
		case len(out) == 0:
			v = nil // rejected: forwarded as a tombstone
		default:
			v = out[0].Value
		}
	}
	return v, nil
}

// javaSplit is the expressions' regexSplit(s, regex): Java's
// String#split(regex), which a flatMapValues splitting text into words
// uses (value.split("\\W+")). Like Java (limit 0) it drops trailing
// empty strings and keeps a leading one where the regex matches a
// non-empty prefix; the regex is RE2, which reads the usual classes (\W,
// \s, [^a-z]) as Java does.
var javaSplit = expr.Function("regexSplit", func(params ...any) (any, error) {
	s, ok1 := params[0].(string)
	re, ok2 := params[1].(string)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("regexSplit wants a string and a regex, got %s and %s", describe(params[0]), describe(params[1]))
	}
	rx, err := splitRegex(re)
	if err != nil {
		return nil, err
	}
	return splitJava(s, rx), nil
}, new(func(string, string) []any))

// javaRound is the expressions' mathRound(x): Java's Math.round, the
// long nearest x with ties rounded up (floor(x + 0.5)); expr's own round
// rounds ties away from zero, which differs for negative halves (-2.5:
// Java -2, round -3). NaN is 0 and the infinities and what a long cannot
// hold saturate, as in Java.
var javaRound = expr.Function("mathRound", func(params ...any) (any, error) {
	var f float64
	switch x := params[0].(type) {
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	case float64:
		f = x
	default:
		return nil, fmt.Errorf("mathRound wants a number, got %s", describe(params[0]))
	}
	switch r := math.Floor(f + 0.5); {
	case math.IsNaN(f):
		return int64(0), nil
	case r >= math.MaxInt64:
		return int64(math.MaxInt64), nil
	case r <= math.MinInt64:
		return int64(math.MinInt64), nil
	default:
		return int64(r), nil
	}
}, new(func(any) int64))

// javaWindowString is the expressions' windowString(key): Kafka Streams'
// Windowed#toString (3.6.2), "[" + key + "@" + start + "/" + end + "]", of
// a windowed table's key, which an app's toStream().map((w, v) ->
// pair(w.toString(), v)) writes as its output's key. The inner key is
// written as Java writes a String or a number; another inner key (a record)
// has a toString kaudit cannot know, and is an error.
var javaWindowString = expr.Function("windowString", func(params ...any) (any, error) {
	w, ok := params[0].(map[string]any)
	if !ok || w["start"] == nil || w["end"] == nil {
		return nil, fmt.Errorf("windowString wants a windowed table's key, got %s", describe(params[0]))
	}
	var inner string
	switch k := w["key"].(type) {
	case string:
		inner = k
	case json.Number:
		inner = k.String()
	case int64, int, int32:
		inner = fmt.Sprint(k)
	case nil:
		inner = "null"
	default:
		return nil, fmt.Errorf("windowString: the window's key %s has no toString kaudit knows (a String or a number has)", describe(k))
	}
	return fmt.Sprintf("[%s@%v/%v]", inner, w["start"], w["end"]), nil
}, new(func(any) string))

var regexCache sync.Map // regex text → *regexp.Regexp

func splitRegex(re string) (*regexp.Regexp, error) {
	if rx, ok := regexCache.Load(re); ok {
		return rx.(*regexp.Regexp), nil
	}
	rx, err := regexp.Compile(re)
	if err != nil {
		return nil, fmt.Errorf("regexSplit: %w", err)
	}
	regexCache.Store(re, rx)
	return rx, nil
}

// splitJava splits s around the matches of rx as Java's String#split(re)
// does: an empty s gives [""]; a zero-width match at the start gives no
// leading empty string; trailing empty strings are removed.
func splitJava(s string, rx *regexp.Regexp) []any {
	if s == "" {
		return []any{""}
	}
	var out []any
	last := 0
	for _, m := range rx.FindAllStringIndex(s, -1) {
		if m[1] == 0 {
			continue // a zero-width match at the start
		}
		if m[0] == m[1] && m[0] == len(s) {
			break
		}
		out = append(out, s[last:m[0]])
		last = m[1]
	}
	out = append(out, s[last:])
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	if len(out) == 0 {
		// Java: "   ".split("\\W+") is [] (every piece empty)
		return []any{}
	}
	return out
}

// NewStep returns a step with its expression compiled, as a spec's steps
// are (kaudit init tries candidate steps on the evidence).
func NewStep(kind StepKind, src, node string) (*Step, error) {
	st := &Step{Kind: kind, Expr: src, Node: node}
	if err := compileStep(st); err != nil {
		return nil, err
	}
	return st, nil
}

// ApplySteps runs a chain of steps on one record, as a table's Apply runs
// its own.
func ApplySteps(steps []*Step, r RecordEnv) ([]Element, error) { return runSteps(steps, r) }

// ApplyStepsUnsure is ApplySteps passing, marked Unsure, what a filter or
// branch with a TODO predicate would judge (TableSpec.ApplyUnsure).
func ApplyStepsUnsure(steps []*Step, r RecordEnv) ([]Element, error) {
	return runStepsUnsure(steps, r, true)
}
