package spec

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/types"
	"github.com/expr-lang/expr/vm"
	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	yamlparser "github.com/goccy/go-yaml/parser"

	"github.com/kaudit/kaudit/audit/codec"
)

// Spec is a kaudit.yaml: what the application's Java lambdas do, said in
// expressions, and which topics the tables and joins use.
type Spec struct {
	// File is the name errors cite.
	File     string `yaml:"-"`
	AppID    string `yaml:"app_id"`
	Topology string `yaml:"topology"` // describe() text file, relative to the spec
	Serdes   Serdes `yaml:"serdes"`
	// Caching false says the app's stores do not cache
	// (statestore.cache.max.bytes=0, cache.max.bytes.buffering=0 before
	// 3.4): every update is written to the changelog. Nil or true: the
	// cache may fold updates. A table's own caching wins.
	Caching *bool        `yaml:"caching"`
	Tables  []*TableSpec `yaml:"tables"`
	Joins   []*JoinSpec  `yaml:"joins"`
	Copies  []*CopySpec  `yaml:"copies"`
	// StreamJoins are stream.join/leftJoin(table) written to an output.
	StreamJoins []*StreamJoinSpec `yaml:"stream_joins"`
	// Dropped says, for a draft (ParseDraft), which tables and joins it
	// left out because the evidence did not settle them.
	Dropped []string `yaml:"-"`
	doc     *ast.File
}

// Serdes names the key and value serdes: string, long, int, short, double,
// float, uuid, bytes, void, json, avro, or Kafka's Java names (String,
// Integer, Long, Double, ByteArray, UUID…; see codec.NormalizeSerde).
type Serdes struct {
	Key   string `yaml:"key"`
	Value string `yaml:"value"`
}

// TableSpec is one table the application folds from a source topic, as
// the spec describes it.
type TableSpec struct {
	Name string `yaml:"name"`
	// Source is the topic the table is folded from; Merged the further
	// topics merged into its stream (source: [a, b] is
	// builder.stream(a).merge(builder.stream(b))). SourceList is source:
	// as written.
	Source     string     `yaml:"-"`
	Merged     []string   `yaml:"-"`
	SourceList StringList `yaml:"source"`
	// SelectKeyExpr is an expression over key, value, headers and timestamp
	// giving the table key; empty keeps the record key.
	SelectKeyExpr string `yaml:"select_key"`
	// Steps are the stateless processors between the source and the
	// store (through the repartition topic), in topology order: filter,
	// mapValues, flatMapValues, selectKey… (steps.go). select_key is the
	// one-line form of a last selectKey step.
	Steps   []*Step `yaml:"steps"`
	Reducer Reducer `yaml:"reduce"`
	// Aggregate is aggregate(initializer, adder) in place of reduce:
	// it sets Reducer (kind aggregate).
	Aggregate *Aggregate `yaml:"aggregate"`
	// Store, Repartition and Changelog override what the topology or the
	// naming conventions say.
	Store       string  `yaml:"store"`
	Repartition string  `yaml:"repartition"`
	Changelog   string  `yaml:"changelog"`
	Serdes      *Serdes `yaml:"serdes"`
	// StoreSerdes are the store's serdes (Materialized.with(key, value)):
	// they apply to the changelog only, over Serdes, e.g. a Long sum of
	// Integer inputs.
	StoreSerdes *Serdes `yaml:"store_serdes"`
	// Output is the topic the table's changes are written to
	// (table.toStream().to(Output)); OutputSerdes its serdes (default: the
	// store's).
	Output       string  `yaml:"output"`
	OutputSerdes *Serdes `yaml:"output_serdes"`
	// TableSteps are the KTable operations between the store and
	// toStream() (KTable#filter, filterNot, mapValues, not materialized):
	// a state a filter rejects is forwarded as a tombstone (KTableFilter
	// without sendOldValues, as toStream() leaves it), mapValues maps the
	// states, a tombstone stays one.
	TableSteps []*Step `yaml:"table_steps"`
	// OutputSteps are the processors after toStream() and before
	// to(Output): filter, filterNot, mapValues, peek.
	OutputSteps []*Step `yaml:"output_steps"`
	// Caching false is Materialized.withCachingDisabled() (or no cache in
	// the app): the store writes every update to its changelog.
	Caching *bool `yaml:"caching"`
	// Window is windowedBy(TimeWindows…): the table's keys are (key,
	// window start); Suppress its suppress(), with Output.
	Window   *Window  `yaml:"window"`
	Suppress Suppress `yaml:"suppress"`
	// Regroup is KTable#groupBy of the table of this name (of tables:):
	// select_key and group_value are its KeyValueMapper's new key and
	// value over the table's rows, and the reducer has a subtractor
	// (count, sum, {expr, subtract}, aggregate {init, expr, subtract}).
	Regroup    string `yaml:"regroup"`
	GroupValue string `yaml:"group_value"`
	// Cogroup lists the grouped streams a cogroup aggregates into the
	// table, each with its own aggregator (aggregate: {init} is the
	// cogroup's initializer).
	Cogroup    []*CogroupMember `yaml:"cogroup"`
	groupValue *vm.Program
	// Unsettled lists, for a draft (ParseDraft), what the evidence did not
	// settle: the table is not judged.
	Unsettled []string `yaml:"-"`
	// Line is the table's line in the spec.
	Line      int `yaml:"-"`
	selectKey *vm.Program
	chain     []*Step // Steps, then select_key as a selectKey step
	// selectPath is select_key as a path of field names, when it is one
	// (value.orderId): SelectKey then walks it without the expression VM.
	selectPath []string
}

// ReducerKind is the kind of a table's reducer.
type ReducerKind string

const (
	ReduceLatest ReducerKind = "latest" // the new value replaces the aggregate
	ReduceCount  ReducerKind = "count"  // a Long count of inputs
	ReduceSum    ReducerKind = "sum"    // sum(FIELD) or plain numeric sum
	ReduceExpr   ReducerKind = "expr"   // an expression over agg and value
	// ReduceAggregate is aggregate(initializer, adder): the first input
	// folds into the initializer's value, as KStreamAggregate does.
	ReduceAggregate ReducerKind = "aggregate"
	ReduceMin       ReducerKind = "min" // min(FIELD) or plain numeric min
	ReduceMax       ReducerKind = "max" // max(FIELD) or plain numeric max
)

// Aggregate is a table's aggregate(initializer, adder): init an
// expression over no names (the initializer's value, e.g. 0 or
// 2147483647), expr an expression over agg and value (the adder).
type Aggregate struct {
	Init     string
	Expr     string
	Subtract string // a KTable groupBy's subtractor
	bad      string
}

// UnmarshalYAML reads {init: …, expr: "…"}; init may be a YAML number.
func (a *Aggregate) UnmarshalYAML(unmarshal func(any) error) error {
	var m map[string]any
	if err := unmarshal(&m); err != nil {
		a.bad = `want {init: "…", expr: "…"}`
		return nil
	}
	for k, v := range m {
		var text string
		switch x := v.(type) {
		case string:
			text = x
		case nil:
		case map[string]any, []any:
			a.bad = fmt.Sprintf("%s: want an expression", k)
			return nil
		default:
			text = fmt.Sprint(x)
		}
		switch k {
		case "init":
			a.Init = text
		case "expr":
			a.Expr = text
		case "subtract":
			a.Subtract = text
		default:
			a.bad = fmt.Sprintf("unknown key %q: want {init: \"…\", expr: \"…\"} (and, for a KTable groupBy, subtract: \"…\")", k)
			return nil
		}
	}
	return nil
}

// Reducer is a table's reduce: latest, count, sum(FIELD), sum or
// {expr: "…"}.
type Reducer struct {
	Kind ReducerKind
	// Table says the reducer is builder.table()'s (reduce: table): the
	// latest value per key, whose timestamp is the record's own, and a
	// null value (a tombstone) deletes the key. Kind is ReduceLatest.
	Table bool
	Field string // sum(FIELD): a field name or dotted path
	Expr  string
	Init  string // aggregate: the initializer expression
	// Subtract is a KTable groupBy's subtractor, over agg and value
	// (reduce {expr, subtract} or aggregate {init, expr, subtract}).
	Subtract string
	sub      *vm.Program
	raw      string
	bad      string
	prog     *vm.Program
	init     *vm.Program
}

var sumRe = regexp.MustCompile(`^(sum|min|max)\(\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*\)$`)

// UnmarshalYAML reads a reducer from a string or from {expr: "…"}.
func (r *Reducer) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err == nil {
		r.raw = s
		return nil
	}
	// Shape errors are reported by validate, which knows the line.
	var m map[string]string
	if err := unmarshal(&m); err != nil {
		r.bad = `want latest, count, sum, sum(FIELD), min, min(FIELD), max, max(FIELD) or {expr: "…"}`
		return nil
	}
	e, ok := m["expr"]
	sub, hasSub := m["subtract"]
	if !ok || len(m) != 1 && !(len(m) == 2 && hasSub) {
		r.bad = `want a mapping with the key expr (and, for a KTable groupBy, subtract)`
		return nil
	}
	r.raw, r.Subtract = "expr: "+e, sub
	return nil
}

// MarshalYAML writes the reducer back as the spec says it.
func (r Reducer) MarshalYAML() (any, error) {
	switch r.Kind {
	case ReduceExpr:
		return map[string]string{"expr": r.Expr}, nil
	case ReduceAggregate:
		return map[string]string{"init": r.Init, "expr": r.Expr}, nil
	}
	return r.String(), nil
}

func (r Reducer) String() string {
	switch r.Kind {
	case ReduceSum, ReduceMin, ReduceMax:
		if r.Field != "" {
			return string(r.Kind) + "(" + r.Field + ")"
		}
	case ReduceExpr:
		return "expr: " + r.Expr
	case ReduceAggregate:
		return "aggregate(init: " + r.Init + ", expr: " + r.Expr + ")"
	case "":
		return r.raw
	}
	return string(r.Kind)
}

// JoinType is a join's type.
type JoinType string

const (
	JoinLeft  JoinType = "left"
	JoinInner JoinType = "inner"
	JoinOuter JoinType = "outer"
)

// JoinSpec is a chain of table-table joins, left.join(r1).join(r2)…, written
// to an output topic.
type JoinSpec struct {
	Output string     `yaml:"output"`
	Left   string     `yaml:"left"`
	Right  StringList `yaml:"right"`
	Type   JoinType   `yaml:"type"`
	// Value is an expression over left, r1, r2… (right = r1) giving the
	// output value; empty means only presence and timestamps are checked.
	Value string `yaml:"value"`
	// Serdes are the output's (Produced.with), over the spec's defaults.
	Serdes *Serdes `yaml:"serdes"`
	// OutputSteps are the processors between the join chain's
	// toStream() and to(Output), as a table's output steps.
	OutputSteps []*Step `yaml:"output_steps"`
	Line        int     `yaml:"-"`
	side        *TableSpec
	// Unsettled lists, for a draft (ParseDraft), what the evidence did not
	// settle: the join is not judged.
	Unsettled []string `yaml:"-"`
	prog      *vm.Program
	proj      *projection // the value, where it only copies fields (project.go)
}

// CopySpec is stream.to(Output) of a source topic read as a stream
// (EosTestClient's data.to("echo")): each consumed input once on Output.
type CopySpec struct {
	Source string `yaml:"source" json:"source"`
	Output string `yaml:"output" json:"output"`
	// Serdes are the output's (Produced.with), over the spec's defaults.
	Serdes *Serdes `yaml:"serdes" json:"-"`
	// Steps are the stateless processors between the source and
	// to(Output) (source.filterNot(…).to(t)), as a table's.
	Steps []*Step `yaml:"steps" json:"-"`
	Line  int     `yaml:"-" json:"-"`
	side  *TableSpec
}

// Apply runs the copy's steps on one input: what it writes to the
// output (a key-changing step is refused by validate).
func (c *CopySpec) Apply(r RecordEnv) ([]Element, error) { return runSteps(c.Steps, r) }

// ValueChanging reports whether the copy's steps may change values.
func (c *CopySpec) ValueChanging() bool { return c.side != nil && c.side.ValueChanging() }

// KeyChanging reports whether the copy's steps may change keys (map,
// flatMap, selectKey).
func (c *CopySpec) KeyChanging() bool {
	for _, st := range c.Steps {
		if st != nil && st.Kind.KeyChanging() {
			return true
		}
	}
	return false
}

// Unjudged says why the copy cannot be judged from the spec ("" when it
// can): a step left TODO, or a Processor API node.
func (c *CopySpec) Unjudged() string {
	if c.side == nil {
		return ""
	}
	if why := unmodelled(c.side, nil); why != "" {
		return why
	}
	return ""
}

// StringList is a YAML list of strings that also accepts a single string.
type StringList []string

// UnmarshalYAML accepts "a" and [a, b].
func (l *StringList) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err == nil {
		*l = []string{s}
		return nil
	}
	var ss []string
	if err := unmarshal(&ss); err != nil {
		// validate reports the empty list with its line.
		*l = nil
		return nil
	}
	*l = ss
	return nil
}

// SpecError is one error of a spec: the file, line and field it concerns.
type SpecError struct {
	File  string
	Line  int
	Field string
	Msg   string
	col   int
}

func (e *SpecError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

// LoadSpec reads and validates a kaudit.yaml.
func LoadSpec(path string) (*Spec, error) {
	data, err := readBounded(path, MaxSpecBytes)
	if err != nil {
		return nil, fmt.Errorf("read spec: %w", err)
	}
	return ParseSpec(path, data)
}

// unmarshalSpec decodes data strictly into s. goccy/go-yaml v1.19.2
// panics on some malformed input (a tag with no value in a sequence, found
// by FuzzParseSpec): that is a YAML error, not a crash.
func unmarshalSpec(data []byte, s *Spec) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the YAML could not be read (%v)", p)
		}
	}()
	return yaml.UnmarshalWithOptions(data, s, yaml.Strict())
}

// ParseSpec parses and validates a spec; name is the file name errors
// cite. Unknown fields are errors, every expression is compiled once, and
// every error is a *SpecError (several are joined with errors.Join).
func ParseSpec(name string, data []byte) (*Spec, error) { return parseSpec(name, data, false) }

// ParseDraft parses a spec kaudit drafted from the evidence (kaudit init,
// or kaudit diff without --spec): what the draft leaves TODO does not stop
// it. A table whose select_key or reducer is TODO, or a join whose type
// is, is Unsettled (Resolve makes it unjudged, naming why); a join whose
// value is TODO checks presence only; a table whose source or store is
// TODO is left out (Dropped says so), with the joins that name it.
func ParseDraft(name string, data []byte) (*Spec, error) { return parseSpec(name, data, true) }

func parseSpec(name string, data []byte, draft bool) (*Spec, error) {
	data = trimBOM(data)
	if err := checkSpecBounds(name, data); err != nil {
		return nil, err
	}
	s := &Spec{File: name}
	// A spec needs no anchors: refusing aliases before decoding keeps a
	// small file from expanding into gigabytes (a "billion laughs").
	if doc, err := yamlparser.ParseBytes(data, 0); err == nil {
		var v aliasVisitor
		for _, d := range doc.Docs {
			ast.Walk(&v, d)
		}
		if v.line > 0 {
			return nil, &SpecError{File: name, Line: v.line, Msg: "YAML aliases are not supported in a spec: write the value out"}
		}
	}
	if err := unmarshalSpec(data, s); err != nil {
		se := yamlError(name, err)
		if f := fieldAt(data, se.Line, se.col); f != "" {
			se.Field = f
		}
		return nil, se
	}
	s.File = name
	doc, err := yamlparser.ParseBytes(data, 0)
	if err != nil {
		return nil, yamlError(name, err)
	}
	s.doc = doc
	if draft {
		s.settle()
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// settle takes a draft's TODOs out of the way of validate: see ParseDraft.
// A spec built in code says the same with the typed calls settle makes
// (DropTable, KeyUnsettled…), from its own unknowns.
func (s *Spec) settle() {
	dropped := map[string]bool{}
	var tables []*TableSpec
	for _, t := range s.Tables {
		if t == nil {
			continue
		}
		src := strings.Join(t.SourceList, ", ")
		if isTODO(src) || isTODO(t.Store) || isTODO(t.Name) || src == "" && t.Regroup == "" && len(t.Cogroup) == 0 {
			s.DropTable(t.Name, cmp.Or(strings.TrimPrefix(strings.TrimSpace(cmp.Or(pickTODO(src), pickTODO(t.Store), pickTODO(t.Name))), "TODO: "), "its source"))
			dropped[t.Name] = true
			continue
		}
		if isTODO(t.SelectKeyExpr) {
			t.KeyUnsettled(strings.TrimPrefix(t.SelectKeyExpr, "TODO: "))
		}
		if t.Window != nil && t.Window.todo != "" {
			t.WindowUnsettled(strings.TrimPrefix(t.Window.todo, "TODO: "))
		}
		if raw := strings.TrimSpace(t.Reducer.raw); isTODO(raw) {
			t.ReducerUnsettled(strings.TrimPrefix(raw, "TODO: "))
		}
		tables = append(tables, t)
	}
	s.Tables = tables
	var joins []*JoinSpec
	for _, j := range s.Joins {
		if j == nil {
			continue
		}
		names := append([]string{j.Left}, j.Right...)
		if isTODO(j.Output) || slices.ContainsFunc(names, func(n string) bool { return dropped[n] || isTODO(n) }) {
			s.DropJoin(j.Output)
			continue
		}
		if isTODO(string(j.Type)) {
			j.TypeUnsettled(strings.TrimPrefix(string(j.Type), "TODO: "))
		}
		if isTODO(j.Value) {
			j.Value = "" // presence only
		}
		joins = append(joins, j)
	}
	s.Joins = joins
	var sjoins []*StreamJoinSpec
	for _, j := range s.StreamJoins {
		if j == nil {
			continue
		}
		stream := strings.Join(j.StreamList, ", ")
		if isTODO(j.Output) || isTODO(stream) || stream == "" || isTODO(j.Table) || dropped[j.Table] {
			s.DropStreamJoin(j.Output)
			continue
		}
		if isTODO(string(j.Type)) {
			j.TypeUnsettled(strings.TrimPrefix(string(j.Type), "TODO: "))
		}
		if isTODO(j.Value) {
			j.Value = "" // presence only
		}
		sjoins = append(sjoins, j)
	}
	s.StreamJoins = sjoins
}

func pickTODO(s string) string {
	if isTODO(s) {
		return s
	}
	return ""
}

// aliasVisitor finds the first alias (*name) in a document.
type aliasVisitor struct{ line int }

func (v *aliasVisitor) Visit(n ast.Node) ast.Visitor {
	if a, ok := n.(*ast.AliasNode); ok && v.line == 0 {
		v.line = a.GetToken().Position.Line
	}
	return v
}

func yamlError(file string, err error) *SpecError {
	var ye yaml.Error
	if errors.As(err, &ye) && ye.GetToken() != nil {
		msg := ye.GetMessage()
		field := ""
		var ue *yaml.UnknownFieldError
		var te *yaml.TypeError
		switch {
		case errors.As(err, &ue):
			field = ye.GetToken().Value
		case errors.As(err, &te) && te.StructFieldName != nil:
			field = *te.StructFieldName
		}
		pos := ye.GetToken().Position
		return &SpecError{File: file, Line: pos.Line, Field: field, Msg: msg, col: pos.Column}
	}
	return &SpecError{File: file, Msg: err.Error()}
}

// fieldVisitor finds the path of the node at a line and column.
type fieldVisitor struct {
	line, col int
	path      string
}

func (v *fieldVisitor) Visit(n ast.Node) ast.Visitor {
	if tk := n.GetToken(); tk != nil && v.path == "" && tk.Position.Line == v.line && tk.Position.Column == v.col {
		v.path = n.GetPath()
	}
	return v
}

// fieldAt names the field at a position of the YAML text, "" when unknown.
func fieldAt(data []byte, line, col int) string {
	doc, err := yamlparser.ParseBytes(data, 0)
	if err != nil {
		return ""
	}
	v := &fieldVisitor{line: line, col: col}
	for _, d := range doc.Docs {
		if d.Body != nil {
			ast.Walk(v, d.Body)
		}
	}
	return strings.TrimPrefix(strings.TrimPrefix(v.path, "$"), ".")
}

// line finds the line of a YAML path such as $.tables[0].reduce; 0 when
// the path is absent.
func (s *Spec) line(path string) int {
	if s.doc == nil {
		return 0
	}
	p, err := yaml.PathString(path)
	if err != nil {
		return 0
	}
	n, err := p.FilterFile(s.doc)
	if err != nil || n == nil || n.GetToken() == nil {
		return 0
	}
	return n.GetToken().Position.Line
}

type errList struct {
	s    *Spec
	errs []*SpecError
}

// add records an error at the YAML path (its line) for field; when the
// path is absent it falls back to the parent path's line.
func (l *errList) add(path, field, format string, args ...any) {
	line := l.s.line(path)
	for p := path; line == 0 && strings.Contains(p, "."); {
		p = p[:strings.LastIndexAny(p, ".[")]
		line = l.s.line(p)
	}
	l.errs = append(l.errs, &SpecError{File: l.s.File, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

func (l *errList) err() error {
	if len(l.errs) == 0 {
		return nil
	}
	slices.SortStableFunc(l.errs, func(a, b *SpecError) int { return cmp.Compare(a.Line, b.Line) })
	errs := make([]error, len(l.errs))
	for i, e := range l.errs {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// recordEnv is the compile-time environment of select_key: values are
// of any type, names outside the environment are errors.
func recordEnv() types.Map {
	return types.Map{"key": types.Any, "value": types.Any, "headers": types.Any, "timestamp": types.Int64}
}

// reduceEnv is a reducer's environment: like Kafka Streams' Reducer, it
// sees the aggregate and the new value only.
func reduceEnv() types.Map {
	return types.Map{"agg": types.Any, "value": types.Any}
}

// joinEnv is a joiner's environment: like a ValueJoiner, it sees the
// values only.
func joinEnv(rights int) types.Map {
	env := types.Map{"left": types.Any, "right": types.Any}
	for i := 1; i <= rights; i++ {
		env["r"+strconv.Itoa(i)] = types.Any
	}
	return env
}

func (s *Spec) validate() error {
	l := &errList{s: s}
	if strings.TrimSpace(s.AppID) == "" {
		l.add("$.app_id", "app_id", "required")
	}
	checkSerdes := func(path, field string, sd Serdes) {
		for _, kv := range [][2]string{{"key", sd.Key}, {"value", sd.Value}} {
			if codec.CheckSerde(kv[1]) != nil {
				l.add(path+"."+kv[0], field+"."+kv[0], "unknown serde %q (want String, Integer, Long, Short, Double, Float, UUID, ByteArray, Void as Kafka names them, or string, int, long, short, double, float, uuid, bytes, void, json, avro, protobuf, protobuf:MESSAGE, json-schema)", kv[1])
			}
		}
	}
	checkSerdes("$.serdes", "serdes", s.Serdes)
	if len(s.Tables) == 0 && len(s.Copies) == 0 {
		l.add("$.tables", "tables", "at least one table (or copy) is required")
	}
	names := map[string]bool{}
	for i, t := range s.Tables {
		path := fmt.Sprintf("$.tables[%d]", i)
		field := fmt.Sprintf("tables[%d]", i)
		if t == nil {
			l.add(path, field, "empty table")
			continue
		}
		t.Line = s.line(path)
		if t.Line == 0 {
			t.Line = s.line(path + ".name")
		}
		switch {
		case t.Name == "":
			l.add(path+".name", field+".name", "required")
		case names[t.Name]:
			l.add(path+".name", field+".name", "table %q defined twice", t.Name)
		}
		names[t.Name] = true
		if len(t.SourceList) > 0 {
			t.Source, t.Merged = t.SourceList[0], slices.Clone(t.SourceList[1:])
		}
		if t.Source == "" && t.Regroup == "" && len(t.Cogroup) == 0 {
			l.add(path+".source", field+".source", "required: the topic the table is folded from (or a list of the topics merged into its stream)")
		}
		for _, m := range t.Merged {
			if m == "" || m == t.Source || slices.Contains(t.Merged[:slices.Index(t.Merged, m)], m) {
				l.add(path+".source", field+".source", "the topics merged must be named once each")
				break
			}
		}
		if t.SelectKeyExpr != "" {
			prog, err := compile(t.SelectKeyExpr, recordEnv())
			if err != nil {
				l.add(path+".select_key", field+".select_key", "%v", err)
			}
			t.selectKey = prog
			t.selectPath = fieldPath(t.SelectKeyExpr)
		}
		s.validateSteps(l, path, field, t)
		if len(t.Cogroup) > 0 {
			s.validateCogroup(l, path, field, t)
		} else if a := t.Aggregate; a != nil {
			switch {
			case t.Reducer.raw != "" || t.Reducer.bad != "":
				l.add(path+".aggregate", field+".aggregate", "give reduce or aggregate, not both")
			case a.bad != "":
				l.add(path+".aggregate", field+".aggregate", "%s", a.bad)
			default:
				t.Reducer.Subtract = a.Subtract
				if err := t.Reducer.parseAggregate(a.Init, a.Expr); err != nil {
					l.add(path+".aggregate", field+".aggregate", "%v", err)
				}
			}
		} else if err := t.Reducer.parse(); err != nil {
			l.add(path+".reduce", field+".reduce", "%v", err)
		}
		s.validateRegroup(l, path, field, t)
		if t.Serdes != nil {
			checkSerdes(path+".serdes", field+".serdes", *t.Serdes)
		}
		if t.OutputSerdes != nil {
			checkSerdes(path+".output_serdes", field+".output_serdes", *t.OutputSerdes)
		}
		if t.StoreSerdes != nil {
			checkSerdes(path+".store_serdes", field+".store_serdes", *t.StoreSerdes)
		}
		s.validateWindow(l, path, field, t)
	}
	for i, j := range s.Joins {
		path := fmt.Sprintf("$.joins[%d]", i)
		field := fmt.Sprintf("joins[%d]", i)
		if j == nil {
			l.add(path, field, "empty join")
			continue
		}
		j.Line = s.line(path)
		if j.Line == 0 {
			j.Line = s.line(path + ".output")
		}
		if j.Output == "" {
			l.add(path+".output", field+".output", "required: the topic the join writes")
		}
		if j.Serdes != nil {
			checkSerdes(path+".serdes", field+".serdes", *j.Serdes)
		}
		j.side = &TableSpec{Name: "join into " + j.Output, OutputSteps: j.OutputSteps, Line: j.Line}
		s.validateSteps(l, path, field, j.side)
		switch {
		case j.Left == "":
			l.add(path+".left", field+".left", "required")
		case !names[j.Left]:
			l.add(path+".left", field+".left", "no table named %q", j.Left)
		}
		if len(j.Right) == 0 {
			l.add(path+".right", field+".right", "want a table name or a list of at least one table name")
		}
		for k, r := range j.Right {
			if !names[r] {
				l.add(fmt.Sprintf("%s.right[%d]", path, k), field+".right", "no table named %q", r)
			}
		}
		for _, name := range append([]string{j.Left}, j.Right...) {
			if t := s.Table(name); t != nil && t.Window != nil {
				l.add(path, field, "table %q is windowed: joins of windowed tables are not modelled", name)
			}
		}
		switch j.Type {
		case "":
			j.Type = JoinLeft
		case JoinLeft, JoinInner, JoinOuter:
		default:
			l.add(path+".type", field+".type", "unknown join type %q (want left, inner or outer)", j.Type)
		}
		if isTODO(j.Value) {
			l.add(path+".value", field+".value", "still TODO: write the joiner expression or remove the field")
		} else if j.Value != "" {
			prog, err := compile(j.Value, joinEnv(len(j.Right)))
			if err != nil {
				l.add(path+".value", field+".value", "%v", err)
			}
			j.prog = prog
			if prog != nil {
				j.proj = projectionOf(j.Value, len(j.Right))
			}
		}
	}
	for i, c := range s.Copies {
		path := fmt.Sprintf("$.copies[%d]", i)
		field := fmt.Sprintf("copies[%d]", i)
		if c == nil {
			l.add(path, field, "empty copy")
			continue
		}
		c.Line = s.line(path)
		if c.Source == "" {
			l.add(path+".source", field+".source", "required: the topic the app reads as a stream")
		}
		if c.Output == "" {
			l.add(path+".output", field+".output", "required: the topic stream.to(…) writes")
		}
		if c.Serdes != nil {
			checkSerdes(path+".serdes", field+".serdes", *c.Serdes)
		}
		c.side = &TableSpec{Name: "copy " + c.Source + " → " + c.Output, Source: c.Source, Steps: c.Steps, Line: c.Line}
		s.validateSteps(l, path, field, c.side)
		for k, st := range c.Steps {
			if st != nil && st.Kind == StepGroupBy {
				l.add(fmt.Sprintf("%s.steps[%d]", path, k), fmt.Sprintf("%s.steps[%d]", field, k), "a copy's steps end at to(): a groupBy makes a table, not a copy")
			}
		}
	}
	s.validateStreamJoins(l, names)
	return l.err()
}

func isTODO(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), "TODO") }

func compile(src string, env types.Map) (*vm.Program, error) {
	if isTODO(src) {
		return nil, errors.New("still TODO: write the expression")
	}
	prog, err := expr.Compile(src, expr.Env(env), javaSplit, javaRound, javaWindowString)
	if err != nil {
		// expr's message ends in a snippet with a caret on further lines;
		// the first line already names the position
		msg, _, _ := strings.Cut(err.Error(), "\n")
		return nil, fmt.Errorf("compile expression %q: %s", src, msg)
	}
	return prog, nil
}

func (r *Reducer) parse() error {
	raw := strings.TrimSpace(r.raw)
	switch {
	case r.bad != "":
		return errors.New(r.bad)
	case raw == "":
		return errors.New("required: latest, table, count, sum, sum(FIELD), min, min(FIELD), max, max(FIELD) or {expr: \"…\"} (or aggregate: {init, expr} in place of reduce)")
	case isTODO(raw):
		return errors.New("still TODO: latest, table, count, sum, sum(FIELD), min, min(FIELD), max, max(FIELD) or {expr: \"…\"} (or aggregate: {init, expr} in place of reduce)")
	case raw == "latest":
		r.Kind = ReduceLatest
	case raw == "table":
		r.Kind, r.Table = ReduceLatest, true
	case raw == "count":
		r.Kind = ReduceCount
	case raw == "sum", raw == "min", raw == "max":
		r.Kind = ReducerKind(raw)
	case strings.HasPrefix(raw, "sum("), strings.HasPrefix(raw, "min("), strings.HasPrefix(raw, "max("):
		m := sumRe.FindStringSubmatch(raw)
		if m == nil {
			return fmt.Errorf("bad %q: want %s(FIELD) with FIELD a name or dotted path", raw, raw[:3])
		}
		r.Kind, r.Field = ReducerKind(m[1]), m[2]
	case strings.HasPrefix(raw, "expr:"):
		r.Expr = strings.TrimSpace(strings.TrimPrefix(raw, "expr:"))
		prog, err := compile(r.Expr, reduceEnv())
		if err != nil {
			return err
		}
		r.Kind, r.prog = ReduceExpr, prog
	default:
		return fmt.Errorf("unknown reducer %q: want latest, table, count, sum, sum(FIELD), min, min(FIELD), max, max(FIELD) or {expr: \"…\"} (or aggregate: {init, expr} in place of reduce)", raw)
	}
	return nil
}

// parseAggregate compiles aggregate(init, expr).
func (r *Reducer) parseAggregate(init, adder string) error {
	init, adder = strings.TrimSpace(init), strings.TrimSpace(adder)
	if init == "" || adder == "" {
		return errors.New(`want {init: "…", expr: "…"}: both the initializer and the adder`)
	}
	ip, err := compile(init, types.Map{})
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	ap, err := compile(adder, reduceEnv())
	if err != nil {
		return fmt.Errorf("expr: %w", err)
	}
	r.Kind, r.Init, r.Expr, r.init, r.prog = ReduceAggregate, init, adder, ip, ap
	r.raw = "aggregate"
	return nil
}

// TopologyPath is the spec's topology file, relative to the directory of
// the spec file; "" when the spec names none.
func (s *Spec) TopologyPath() string {
	if s.Topology == "" || filepath.IsAbs(s.Topology) {
		return s.Topology
	}
	return filepath.Join(filepath.Dir(s.File), s.Topology)
}

// Table returns the table named name.
func (s *Spec) Table(name string) *TableSpec {
	for _, t := range s.Tables {
		if t != nil && t.Name == name {
			return t
		}
	}
	return nil
}
