package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"

	"github.com/kaudit/kaudit/audit"
)

// ErrNullValue is returned by Reduce for a null value: Kafka Streams skips
// such records in reduce, aggregate and count.
var ErrNullValue = errors.New("null value: skipped by Kafka Streams")

// ErrNoValue is returned by Join.Eval for a join without a value
// expression.
var ErrNoValue = errors.New("the join has no value expression")

// RecordEnv is one input record as select_key sees it: key and value are
// canonical decoded values (nil, bool, string, json.Number, []any,
// map[string]any).
type RecordEnv struct {
	Key       any
	Value     any
	Headers   []audit.Header
	Timestamp int64
}

func (r RecordEnv) env() map[string]any {
	h := map[string]any{}
	for _, x := range r.Headers {
		h[x.Key] = string(x.Value)
	}
	return map[string]any{"key": toExpr(r.Key), "value": toExpr(r.Value), "headers": h, "timestamp": r.Timestamp}
}

// SelectKey returns the table key of a record: the select_key expression's
// result, or the record key when the table has none. A nil key is one
// Kafka Streams drops.
func (t *TableSpec) SelectKey(r RecordEnv) (any, error) {
	if t.selectKey == nil {
		return r.Key, nil
	}
	if v, ok := walkPath(r, t.selectPath); ok {
		return fromExpr(toExpr(v)) // what the expression gives for a field that is there
	}
	out, err := expr.Run(t.selectKey, r.env())
	if err != nil {
		return nil, fmt.Errorf("table %s: select_key: %w", t.Name, err)
	}
	return fromExpr(out)
}

// fieldPath returns an expression of the form key.a.b or value.a.b as
// its names (["value", "a", "b"]), or nil.
func fieldPath(src string) []string {
	parts := strings.Split(strings.TrimSpace(src), ".")
	if len(parts) < 2 || (parts[0] != "value" && parts[0] != "key") {
		return nil
	}
	for _, p := range parts[1:] {
		if p == "" || !IsIdent(p) {
			return nil
		}
	}
	return parts
}

// IsIdent reports whether s is a field name a path may hold without
// quoting (letters, digits and _, not starting with a digit).
func IsIdent(s string) bool {
	for i, c := range s {
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && '0' <= c && c <= '9':
		default:
			return false
		}
	}
	return true
}

// walkPath follows path through the record's decoded maps; false when a
// step is not a map holding the name, where the expression VM decides.
func walkPath(r RecordEnv, path []string) (any, bool) {
	if path == nil {
		return nil, false
	}
	v := r.Value
	if path[0] == "key" {
		v = r.Key
	}
	for _, name := range path[1:] {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[name]; !ok {
			return nil, false
		}
	}
	return v, true
}

// OrderDependent reports whether the reducer's result depends on the
// order of its inputs (latest, expr and aggregate).
func (t *TableSpec) OrderDependent() bool {
	return t.Reducer.Kind == ReduceLatest || t.Reducer.Kind == ReduceExpr || t.Reducer.Kind == ReduceAggregate
}

// Reduce folds value into agg; first says there is no aggregate yet (agg
// is then ignored). A nil value returns ErrNullValue with agg unchanged.
// Numbers are json.Number in and out.
func (t *TableSpec) Reduce(agg, value any, first bool) (any, error) {
	if value == nil {
		return agg, ErrNullValue
	}
	r := t.Reducer
	switch r.Kind {
	case ReduceLatest:
		return value, nil
	case ReduceCount:
		if first {
			return json.Number("1"), nil
		}
		n, err := addNumbers(agg, json.Number("1"))
		if err != nil {
			return nil, fmt.Errorf("table %s: count: %w", t.Name, err)
		}
		return n, nil
	case ReduceSum:
		if first {
			return value, nil
		}
		if r.Field == "" {
			n, err := addNumbers(agg, value)
			if err != nil {
				return nil, fmt.Errorf("table %s: sum: %w", t.Name, err)
			}
			return n, nil
		}
		out, err := sumField(agg, value, strings.Split(r.Field, "."))
		if err != nil {
			return nil, fmt.Errorf("table %s: sum(%s): %w", t.Name, r.Field, err)
		}
		return out, nil
	case ReduceMin, ReduceMax:
		if first {
			return value, nil
		}
		if r.Field == "" {
			n, err := extreme(r.Kind, agg, value)
			if err != nil {
				return nil, fmt.Errorf("table %s: %s: %w", t.Name, r.Kind, err)
			}
			return n, nil
		}
		out, err := foldField(agg, value, strings.Split(r.Field, "."), func(a, b any) (any, error) { return extreme(r.Kind, a, b) }, false)
		if err != nil {
			return nil, fmt.Errorf("table %s: %s: %w", t.Name, r, err)
		}
		return out, nil
	case ReduceAggregate:
		if first {
			init, err := expr.Run(r.init, map[string]any{})
			if err != nil {
				return nil, fmt.Errorf("table %s: aggregate: init: %w", t.Name, err)
			}
			agg = init
		} else {
			agg = toExpr(agg)
		}
		out, err := expr.Run(r.prog, map[string]any{"agg": agg, "value": toExpr(value)})
		if err != nil {
			return nil, fmt.Errorf("table %s: aggregate: %w", t.Name, err)
		}
		return fromExpr(out)
	case ReduceExpr:
		if first {
			return value, nil
		}
		env := map[string]any{"agg": toExpr(agg), "value": toExpr(value)}
		out, err := expr.Run(r.prog, env)
		if err != nil {
			return nil, fmt.Errorf("table %s: reduce: %w", t.Name, err)
		}
		return fromExpr(out)
	}
	return nil, fmt.Errorf("table %s: no reducer", t.Name)
}

// extreme returns the lower (min) or higher (max) of two numbers, a when
// they are equal (as (value < agg) ? value : agg keeps the aggregate).
func extreme(kind ReducerKind, a, b any) (any, error) {
	c, err := compareNumbers(a, b)
	if err != nil {
		return nil, err
	}
	if (kind == ReduceMin && c > 0) || (kind == ReduceMax && c < 0) {
		return b, nil
	}
	return a, nil
}

// compareNumbers compares two numbers: exactly when both are integers,
// else as float64.
func compareNumbers(a, b any) (int, error) {
	ai, af, aInt, err := number(a)
	if err != nil {
		return 0, err
	}
	bi, bf, bInt, err := number(b)
	if err != nil {
		return 0, err
	}
	if aInt && bInt {
		return cmpInt(ai, bi), nil
	}
	if aInt {
		af = float64(ai)
	}
	if bInt {
		bf = float64(bi)
	}
	switch {
	case af < bf:
		return -1, nil
	case af > bf:
		return 1, nil
	}
	return 0, nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// sumField returns a copy of agg whose field at path is agg's plus value's.
func sumField(agg, value any, path []string) (any, error) {
	return foldField(agg, value, path, func(a, b any) (any, error) { return addNumbers(a, b) }, true)
}

// foldField returns a copy of agg whose field at path is op(agg's, value's);
// a field the aggregate lacks counts as 0 for a sum, as value's otherwise.
func foldField(agg, value any, path []string, op func(a, b any) (any, error), sum bool) (any, error) {
	am, ok := agg.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("aggregate is %T, not an object", agg)
	}
	vm, ok := value.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("value is %T, not an object", value)
	}
	out := make(map[string]any, len(am))
	for k, v := range am {
		out[k] = v
	}
	if len(path) == 1 {
		a, b := am[path[0]], vm[path[0]]
		if b == nil {
			return nil, fmt.Errorf("value has no field %s", path[0])
		}
		if a == nil {
			a = json.Number("0") // sum: the field counts from 0
			if !sum {
				a = b
			}
		}
		n, err := op(a, b)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", path[0], err)
		}
		out[path[0]] = n
		return out, nil
	}
	inner, err := foldField(am[path[0]], vm[path[0]], path[1:], op, sum)
	if err != nil {
		return nil, fmt.Errorf("%s.%w", path[0], err)
	}
	out[path[0]] = inner
	return out, nil
}

// number reads a canonical or Go number: an int64 when it is one.
func number(v any) (i int64, f float64, isInt bool, err error) {
	switch n := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return i, 0, true, nil
		}
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return 0, 0, false, fmt.Errorf("%q is not a number", string(n))
		}
		return 0, f, false, nil
	case int:
		return int64(n), 0, true, nil
	case int64:
		return n, 0, true, nil
	case int32:
		return int64(n), 0, true, nil
	case float64:
		return 0, n, false, nil
	case float32:
		return 0, float64(n), false, nil
	}
	return 0, 0, false, fmt.Errorf("%T is not a number", v)
}

// addNumbers adds two numbers: exactly when both are integers, else in
// float64 (as a Java double would).
func addNumbers(a, b any) (json.Number, error) {
	ai, af, aInt, err := number(a)
	if err != nil {
		return "", err
	}
	bi, bf, bInt, err := number(b)
	if err != nil {
		return "", err
	}
	if aInt && bInt {
		s := new(big.Int).Add(big.NewInt(ai), big.NewInt(bi))
		return json.Number(s.String()), nil
	}
	if aInt {
		af = float64(ai)
	}
	if bInt {
		bf = float64(bi)
	}
	return formatFloat(af + bf), nil
}

func formatFloat(f float64) json.Number {
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
}

// toExpr turns a canonical value into what expressions compute with:
// json.Number becomes int64 or float64. Maps and slices are copied.
func toExpr(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i
		}
		if f, err := strconv.ParseFloat(string(x), 64); err == nil {
			return f
		}
		return string(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = toExpr(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = toExpr(e)
		}
		return out
	}
	return v
}

// fromExpr turns an expression result back into a canonical value.
func fromExpr(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, string, json.Number:
		return v, nil
	case int:
		return json.Number(strconv.Itoa(x)), nil
	case int64:
		return json.Number(strconv.FormatInt(x, 10)), nil
	case int32:
		return json.Number(strconv.FormatInt(int64(x), 10)), nil
	case uint, uint64, uint32, int8, int16, uint8, uint16:
		return json.Number(fmt.Sprint(x)), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("result %v is not a JSON number", x)
		}
		return formatFloat(x), nil
	case float32:
		return fromExpr(float64(x))
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, err := fromExpr(e)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := fromExpr(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return nil, fmt.Errorf("result of type %T is not a JSON value", v)
}

// HasValue reports whether the join has a value expression.
func (j *JoinSpec) HasValue() bool { return j.prog != nil }

// Present reports whether the join chain emits a result for a key whose
// tables hold left and rights (nil where a table has no value): a left
// join needs left, an inner join every table, an outer join any.
func (j *JoinSpec) Present(left any, rights []any) bool {
	switch j.Type {
	case JoinInner:
		if left == nil {
			return false
		}
		for _, r := range rights {
			if r == nil {
				return false
			}
		}
		return true
	case JoinOuter:
		if left != nil {
			return true
		}
		for _, r := range rights {
			if r != nil {
				return true
			}
		}
		return false
	}
	return left != nil
}

// Eval computes the join's output value for one key: (nil, nil) when the
// chain emits nothing for it (see Present), else the value expression over
// left, r1, r2… (right is r1). Without a value expression it returns
// ErrNoValue.
func (j *JoinSpec) Eval(left any, rights []any) (any, error) {
	if len(rights) != len(j.Right) {
		return nil, fmt.Errorf("join %s: %d right values for %d right tables", j.Output, len(rights), len(j.Right))
	}
	if !j.Present(left, rights) {
		return nil, nil
	}
	if j.prog == nil {
		return nil, ErrNoValue
	}
	if j.proj != nil && !noProjection {
		if v, ok, err := j.proj.eval(left, rights); ok {
			return v, err
		}
	}
	return j.run(left, rights)
}

// SideFields lists, per side (left first, then r1, r2…), the top-level
// fields of its value the join's value reads, where the value only copies
// fields (a projection: Eval gives the same for values holding only those
// fields as for the whole values); nil otherwise, when the values are
// needed whole.
func (j *JoinSpec) SideFields() [][]string {
	if j.proj == nil || noProjection {
		return nil
	}
	return j.proj.sideFields(len(j.Right))
}

// noProjection turns the projections off (a test compares them with the
// programs).
var noProjection bool

// run evaluates the join's program.
func (j *JoinSpec) run(left any, rights []any) (any, error) {
	env := map[string]any{"left": toExpr(left), "right": nil}
	for i, r := range rights {
		env["r"+strconv.Itoa(i+1)] = toExpr(r)
	}
	if len(rights) > 0 {
		env["right"] = env["r1"]
	}
	out, err := expr.Run(j.prog, env)
	if err != nil {
		return nil, fmt.Errorf("join %s: value: %w", j.Output, err)
	}
	return fromExpr(out)
}

// HasOutputSteps reports whether the join states output steps.
func (j *JoinSpec) HasOutputSteps() bool { return len(j.OutputSteps) > 0 }

// ApplyOutput runs the join's output steps on its joined value for a key:
// what toStream()…to(output) writes of it (none: filtered out).
func (j *JoinSpec) ApplyOutput(r RecordEnv) ([]Element, error) { return j.side.ApplyOutput(r) }
