package reconcile

// What the app does, as the engine needs it: tables, joins, stream joins, copies.

import (
	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/spec"
)

// Env is what a key selector sees of one input record.
type Env struct {
	Key       audit.Value
	Value     audit.Value
	Headers   []audit.Header
	Timestamp int64
}

// Table is one KTable built by stream(source).selectKey().groupByKey().reduce().
type Table struct {
	Name   string
	Source string // source topic
	// Merged are the further source topics merged into Source's stream
	// (builder.stream(a).merge(builder.stream(b))): their records are
	// inputs of the table as Source's are.
	Merged      []string
	Repartition string // repartition topic; "" when the key is unchanged and nothing repartitions
	// KeySerde is the serde of the table's keys on its repartition topic
	// and changelog where the table's serdes name one ("": the
	// pipeline's): it places a key in its partition.
	KeySerde  string
	Store     string
	Changelog string
	// SelectKey returns the table key of an input; nil keeps the record key.
	SelectKey func(Env) (audit.Value, error)
	// Steps, when set, runs the table's stateless steps (filter,
	// mapValues, flatMapValues, selectKey…) on an input in place of
	// SelectKey: the elements it emits each reach the repartition topic
	// (or the store) with the input's timestamp; none is an input the
	// steps filter out. An error makes the table unjudged (StepsError
	// says which step, for the report).
	Steps func(Env) ([]Element, error)
	// ValueChanging says Steps may change values (mapValues, flatMap…):
	// an element's value is digested as Steps gives it, not read from
	// the source record.
	ValueChanging bool
	// Flat says Steps may emit several elements for one input (flatMap,
	// flatMapValues): a finding names its element.
	Flat bool
	// OutputSteps, when set, runs the steps between toStream() and
	// to(Output) on one state of the table: what the output holds of it
	// (none: the state is filtered out). OutputUnjudged says why the
	// output cannot be judged ("" judges it).
	OutputSteps    func(Env) ([]Element, error)
	OutputUnjudged string
	// OutputRekeys says OutputSteps give each state's output its own key
	// (a map or selectKey after toStream(), a windowed key's toString()):
	// the output is read by that key and judged where table keys and
	// output keys map one to one.
	OutputRekeys bool
	// SelectField, when set, says SelectKey reads nothing of an input but
	// its value's top-level field of this name (select_key: value.FIELD):
	// where the table keeps no value either (Latest), a source value is
	// then digested and only that field built.
	SelectField string
	// Reduce folds value into agg; first says there is no aggregate yet.
	// Nil when no spec says the reducer: the state checks are then skipped.
	Reduce func(agg, value audit.Value, first bool) (audit.Value, error)
	// OrderDependent is true for reducers whose result depends on the order
	// of inputs (latest, expressions): any feasible order is accepted.
	OrderDependent bool
	// Latest is true for the latest-wins reducer, whose state is the last
	// input applied (the engine compares digests, not folds).
	Latest bool
	// TableSource says the table is builder.table(Source) (with Latest):
	// a state's timestamp is its record's own, not the newest applied,
	// and a null value is an input that deletes the key (KTableSource).
	TableSource bool
	// Output is the topic the table's changes are written to
	// (table.toStream().to(Output)), "" for none: each key's last record
	// there must be the store's final state, value and timestamp (the cache
	// flush writes the changelog and forwards downstream the same states).
	Output string
	// Uncached says the store writes every update to its changelog (no
	// cache): where a changelog partition holds every record it was
	// written, a key's history is then each application's state, none
	// folded away, and an input whose state is missing is lost even when a
	// later input's state hides it (a min or max).
	Uncached bool
	// Window is windowedBy(TimeWindows…), nil for a plain table: each
	// (key, window) is a key of its own (window.go).
	Window *Window
	// Unjudged says why the table is not judged ("" judges it): the spec
	// check found the spec does not describe it. The reason goes to the
	// report's missing evidence.
	Unjudged string
	// Unsure names the filters (and branches) before the repartition
	// topic whose predicate is not known: Steps passes what they would
	// judge, marking it (Element.Unsure); a copy says the app kept the
	// input, and an input with none may have been filtered on purpose, so
	// it is missing evidence, never a loss.
	Unsure string
	// Regroup, when set, makes the table a KTable groupBy of the table
	// whose rows Source holds (regroup.go), judged by its own check.
	Regroup *Regroup
	// Cogroup, when set, makes the table a cogroup of its members'
	// streams (cogroup.go), judged by its own check.
	Cogroup *Cogroup
}

// Element is one record a table's steps emit for an input.
type Element struct {
	Key   audit.Value
	Value audit.Value
	// Unsure: it passed a filter whose predicate is not known (Table.Unsure)
	Unsure bool
}

// Join is t1.join(t2).join(t3)… written to an output topic.
type Join struct {
	Output string
	Left   string
	Right  []string
	Type   string // left, inner, outer
	// Value computes the joined value from the left and right values (nil
	// for an absent side); nil checks presence and timestamps only.
	Value func(left audit.Value, rights []audit.Value) (audit.Value, error)
	// Fields lists, per table (left first), the top-level fields of its
	// value that Value reads, where Value gives the same for values holding
	// only those; nil: Value needs the values whole. The join then decodes
	// only those fields of each final state.
	Fields [][]string
	// Copies, where Value only copies top-level fields of the tables'
	// values (spec.JoinSpec.Copies: each key's side and field, keys in
	// their bytes' order), lets the join digest a key's expected value from
	// the fields' canonical texts, without building the sides' fields or
	// the value (join.go, expectedDigest); Value still judges every key
	// whose digest the output's does not match.
	Copies []spec.Copy
	// OutputSteps, when set, runs the steps between the join chain and
	// to(Output) on a key's joined value (none: filtered out).
	OutputSteps func(Env) ([]Element, error)
	// Unjudged says why the join is not judged ("" judges it).
	Unjudged string
	// concurrent says Value may be called from several goroutines at
	// once (FromPlan's is)
	concurrent bool
	// racing says the group's offsets moved while the audit read the
	// join's tables and output (run.movedSince)
	racing bool
}

// Pipeline is what the app does, as far as an audit needs to know.
type Pipeline struct {
	AppID  string
	Tables []Table
	Joins  []Join
	Copies []Copy
	// StreamJoins are the stream-table joins.
	StreamJoins []StreamJoin
	// KeySerde is the serde of table keys on repartition topics,
	// changelogs and the output ("string", "long", "int", "bytes", "json",
	// "avro"); it decides how a selected key is serialized to find its
	// repartition partition.
	KeySerde string
	// Keyless is set when no spec says how inputs are keyed: records are
	// not decoded or matched across hops; the checks that need no key run
	// (offsets, transactions, retention gaps, purges before commit, lag).
	// Tables then name single topics; Outputs lists output topics.
	Keyless bool
	Outputs []string
}

func (p *Pipeline) table(name string) *Table {
	for i := range p.Tables {
		if p.Tables[i].Name == name {
			return &p.Tables[i]
		}
	}
	return nil
}
