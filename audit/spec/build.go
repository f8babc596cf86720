package spec

import (
	"fmt"
	"strconv"
)

// A spec built in code, not read from YAML: kaudit's spec inferred from
// the evidence (draft.Draft.Spec). Its tables, joins, copies and stream
// joins are the exported fields of their types, their steps NewStep's or
// UnknownStep's, their reducers ParseReducer's, their windows NewWindow's;
// what the evidence did not settle is said with DropTable, KeyUnsettled
// and the like, as ParseDraft says a draft's TODOs; New then validates and
// compiles it as ParseSpec does a file's. It has no lines: its errors and
// reasons name the field, the table and the node.

// New validates and compiles a spec built in code: every expression
// compiled once, every error a *SpecError naming the field (several
// joined with errors.Join), as ParseSpec's.
func New(s *Spec) (*Spec, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// NewWindow is a table's TimeWindows of size and advance, in
// milliseconds, with its grace; graceUnknown is `grace: unknown` (the
// grace is then 0, a lower bound, as Window.GraceUnknown says).
func NewWindow(size, advance, grace int64, graceUnknown bool) *Window {
	w := &Window{raw: map[string]string{"size": strconv.FormatInt(size, 10), "advance": strconv.FormatInt(advance, 10)}}
	switch {
	case graceUnknown:
		w.raw["grace"] = GraceUnknown
	default:
		w.raw["grace"] = strconv.FormatInt(grace, 10)
	}
	return w
}

// UnknownStep is a step whose lambda the evidence does not tell (why):
// it is not evaluated, as a step a spec leaves TODO is not, so the table
// through it is not judged; a filter or branch among them leaves only the
// inputs without a copy unjudged (TableSpec.UnknownPredicates).
func UnknownStep(kind StepKind, node, why string) *Step {
	return &Step{Kind: kind, Node: node, Unknown: why}
}

// DropTable leaves table name out of a draft: the evidence does not say
// what (its source, its store), so neither it nor a join over it is
// judged.
func (s *Spec) DropTable(name, what string) {
	s.Dropped = append(s.Dropped, fmt.Sprintf("table %s is not judged: the evidence does not say %s", name, what))
}

// DropJoin leaves the join into output out of a draft: the evidence does
// not settle its output or its tables.
func (s *Spec) DropJoin(output string) {
	s.Dropped = append(s.Dropped, fmt.Sprintf("join into %s is not judged: the evidence does not settle its output or tables", output))
}

// DropStreamJoin leaves the stream join into output out of a draft: the
// evidence does not settle its output, its stream or its table.
func (s *Spec) DropStreamJoin(output string) {
	s.Dropped = append(s.Dropped, fmt.Sprintf("stream join into %s is not judged: the evidence does not settle its output, stream or table", output))
}

// KeyUnsettled says the evidence does not settle the table's select_key
// (why): the table is not judged. A KTable groupBy's select_key becomes
// the row's key, which nothing uses; set Regroup first.
func (t *TableSpec) KeyUnsettled(why string) {
	t.Unsettled = append(t.Unsettled, "select_key ("+why+")")
	t.SelectKeyExpr = ""
	if t.Regroup != "" {
		t.SelectKeyExpr = "key" // a KTable groupBy needs one; not used: the table is not judged
	}
}

// WindowUnsettled says the evidence does not settle the table's window
// (why): the table is not judged, and its keys are still read as
// windows'.
func (t *TableSpec) WindowUnsettled(why string) {
	t.Unsettled = append(t.Unsettled, "the window ("+why+")")
	// not used to judge: the table is not; its keys are still read as windows
	t.Window = &Window{raw: map[string]string{"size": "1"}}
}

// ReducerUnsettled says the evidence does not settle the table's reducer
// (why): the table is not judged. Set Regroup first: a KTable groupBy's
// reducer has a subtractor.
func (t *TableSpec) ReducerUnsettled(why string) {
	t.Unsettled = append(t.Unsettled, "the reducer ("+why+")")
	t.Reducer = Reducer{raw: "latest"} // not used: the table is not judged
	if t.Regroup != "" {
		t.Reducer.raw = "count" // a KTable groupBy's reducer has a subtractor
	}
}

// TypeUnsettled says the evidence does not settle the join's type (why):
// the join is not judged.
func (j *JoinSpec) TypeUnsettled(why string) {
	j.Unsettled = append(j.Unsettled, "its type ("+why+")")
	j.Type = JoinLeft
}

// TypeUnsettled says the evidence does not settle the stream join's type
// (why): it is not judged.
func (j *StreamJoinSpec) TypeUnsettled(why string) {
	j.Unsettled = append(j.Unsettled, "its type ("+why+")")
	j.Type = JoinLeft
}

// At names a place of the spec in a note: "file:line", or the file alone
// where the spec has no lines (one built in code).
func (s *Spec) At(line int) string {
	if line <= 0 {
		return s.File
	}
	return s.File + ":" + strconv.Itoa(line)
}
