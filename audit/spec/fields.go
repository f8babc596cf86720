package spec

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	exprast "github.com/expr-lang/expr/ast"
	exprparser "github.com/expr-lang/expr/parser"
)

// FieldPath is one field an expression reads: the name of the record it
// starts from (value, key, agg, left, right, r1…) and the field names
// followed from it (value.customer.id is ["value", "customer", "id"]).
type FieldPath []string

func (p FieldPath) String() string { return strings.Join(p, ".") }

// FieldPaths lists the field paths an expression reads, each once, in the
// order they first appear: a.b, a?.b, a["b"] and a.b.c (as one path);
// names of the environment read whole (value alone) are not listed.
func FieldPaths(src string) ([]FieldPath, error) {
	tree, err := exprparser.Parse(src)
	if err != nil {
		msg, _, _ := strings.Cut(err.Error(), "\n")
		return nil, fmt.Errorf("parse expression %q: %s", src, msg)
	}
	v := &pathVisitor{}
	exprast.Walk(&tree.Node, v)
	return v.paths, nil
}

type pathVisitor struct {
	paths []FieldPath
	// inner are the member nodes already counted as part of a longer path.
	inner map[exprast.Node]bool
}

func (v *pathVisitor) Visit(n *exprast.Node) {
	m, ok := (*n).(*exprast.MemberNode)
	if !ok || v.inner[m] {
		return
	}
	// exprast.Walk visits children first: the outermost member of a chain
	// comes last, so paths are collected from every member and the
	// shorter ones (prefixes) dropped.
	p, ok := memberPath(m)
	if !ok {
		return
	}
	for i, q := range v.paths {
		if len(q) < len(p) && slices.Equal(q, p[:len(q)]) {
			v.paths[i] = p
			v.dedupe()
			return
		}
	}
	for _, q := range v.paths {
		if len(q) >= len(p) && slices.Equal(q[:len(p)], p) {
			return
		}
	}
	v.paths = append(v.paths, p)
}

func (v *pathVisitor) dedupe() {
	var out []FieldPath
	for _, p := range v.paths {
		if !slices.ContainsFunc(out, func(q FieldPath) bool { return slices.Equal(p, q) }) {
			out = append(out, p)
		}
	}
	v.paths = out
}

// memberPath reads a.b.c (with ?. and ["b"]) down to its identifier.
func memberPath(m *exprast.MemberNode) (FieldPath, bool) {
	var rev []string
	var n exprast.Node = m
	for {
		switch x := n.(type) {
		case *exprast.MemberNode:
			s, ok := x.Property.(*exprast.StringNode)
			if !ok || x.Method {
				return nil, false
			}
			rev = append(rev, s.Value)
			n = x.Node
			continue
		case *exprast.ChainNode:
			n = x.Node
			continue
		case *exprast.IdentifierNode:
			rev = append(rev, x.Value)
		default:
			return nil, false
		}
		break
	}
	slices.Reverse(rev)
	return rev, true
}

// Expression is one expression of a spec, with where it is and what its
// names stand for.
type Expression struct {
	Line  int        // its line in the spec
	Field string     // tables[1].reduce
	Src   string     // the expression's text (sum(amount) reads as value.amount and agg.amount)
	Table *TableSpec // the table it belongs to (select_key, reduce)
	Join  *JoinSpec  // the join it belongs to (value)
	Paths []FieldPath
}

// Expressions lists every select_key, reduce and join value of the spec
// with the field paths they read. A sum(FIELD), min(FIELD) or max(FIELD)
// reads value.FIELD and agg.FIELD; an aggregate the fields its adder reads.
func (s *Spec) Expressions() []Expression {
	var out []Expression
	for i, t := range s.Tables {
		if t == nil {
			continue
		}
		path := fmt.Sprintf("$.tables[%d]", i)
		field := fmt.Sprintf("tables[%d]", i)
		// the steps up to the first that changes values read the source's
		// records; a select_key after such a step reads what it emits
		changed := false
		for j, st := range t.Steps {
			if st == nil || changed {
				break
			}
			changed = st.Kind.ValueChanging()
			if st.prog == nil {
				continue
			}
			ps, _ := FieldPaths(st.Expr)
			out = append(out, Expression{Line: st.Line, Field: fmt.Sprintf("%s.steps[%d]", field, j), Src: st.Expr, Table: t, Paths: ps})
		}
		if t.SelectKeyExpr != "" {
			ps, _ := FieldPaths(t.SelectKeyExpr)
			out = append(out, Expression{Line: s.lineOr(path+".select_key", t.Line), Field: field + ".select_key", Src: t.SelectKeyExpr, Table: t, Paths: ps})
		}
		if t.Regroup != "" || len(t.Cogroup) > 0 {
			continue // a regroup's values are in change records, a cogroup's aggregators its members': the audit checks them
		}
		r := t.Reducer
		var ps []FieldPath
		switch {
		case (r.Kind == ReduceSum || r.Kind == ReduceMin || r.Kind == ReduceMax) && r.Field != "":
			f := strings.Split(r.Field, ".")
			ps = []FieldPath{append(FieldPath{"value"}, f...), append(FieldPath{"agg"}, f...)}
		case r.Kind == ReduceExpr, r.Kind == ReduceAggregate:
			// the initializer reads no names
			ps, _ = FieldPaths(r.Expr)
		default:
			continue
		}
		out = append(out, Expression{Line: s.lineOr(path+".reduce", t.Line), Field: field + ".reduce", Src: r.String(), Table: t, Paths: ps})
	}
	for i, j := range s.Joins {
		if j == nil || j.Value == "" {
			continue
		}
		path := fmt.Sprintf("$.joins[%d]", i)
		ps, _ := FieldPaths(j.Value)
		out = append(out, Expression{Line: s.lineOr(path+".value", j.Line), Field: fmt.Sprintf("joins[%d].value", i), Src: j.Value, Join: j, Paths: ps})
	}
	return out
}

func (s *Spec) lineOr(path string, def int) int {
	if l := s.line(path); l > 0 {
		return l
	}
	return def
}

// Line returns the line of a YAML path of the spec ($.tables[0].reduce),
// 0 when the path is absent.
func (s *Spec) Line(path string) int { return s.line(path) }

// JoinRoot returns the table a join expression's name stands for: left,
// right (r1) and rN; nil for other names.
func (j *JoinSpec) JoinRoot(name string) (table string, ok bool) {
	switch {
	case name == "left":
		return j.Left, true
	case name == "right" && len(j.Right) > 0:
		return j.Right[0], true
	case strings.HasPrefix(name, "r"):
		n, err := strconv.Atoi(name[1:])
		if err == nil && n >= 1 && n <= len(j.Right) {
			return j.Right[n-1], true
		}
	}
	return "", false
}

// ParseReducer parses a reducer as the spec writes it: latest, count,
// sum, sum(FIELD), min, min(FIELD), max, max(FIELD) or "expr: …".
func ParseReducer(s string) (Reducer, error) {
	r := Reducer{raw: s}
	err := r.parse()
	return r, err
}

// NewJoin returns a join with its value expression compiled, as a spec's
// joins are (typ "" is a left join).
func NewJoin(output, left string, right []string, typ JoinType, value string) (*JoinSpec, error) {
	j := &JoinSpec{Output: output, Left: left, Right: right, Type: cmp.Or(typ, JoinLeft), Value: value}
	if value != "" {
		prog, err := compile(value, joinEnv(len(right)))
		if err != nil {
			return nil, err
		}
		j.prog, j.proj = prog, projectionOf(value, len(right))
	}
	return j, nil
}
