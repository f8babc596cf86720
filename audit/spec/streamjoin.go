package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/types"
	"github.com/expr-lang/expr/vm"

	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/topology"
)

// StreamJoinSpec is stream.join(table, joiner) or stream.leftJoin(table,
// joiner) written to an output topic: each record of the stream looks the
// table up by its key and yields one joined record (left), or one only
// where the table holds the key (inner), with the stream record's key and
// timestamp (Kafka Streams 3.6.2's KStreamKTableJoinProcessor).
type StreamJoinSpec struct {
	// Output is the topic the joined stream is written to.
	Output string `yaml:"output"`
	// StreamList is the stream's source topic, or the topics merged into
	// it ([a, b]); Stream and Merged split it.
	StreamList StringList `yaml:"stream"`
	Stream     string     `yaml:"-"`
	Merged     []string   `yaml:"-"`
	// Steps are the stateless processors between the stream's source and
	// the join (a key-changing one makes Streams repartition the stream
	// to the table's partitions); Repartition names that topic where no
	// topology says it.
	Steps       []*Step `yaml:"steps"`
	Repartition string  `yaml:"repartition"`
	// Table is the name of the table (of tables:) the join looks up.
	Table string   `yaml:"table"`
	Type  JoinType `yaml:"type"` // left (default) or inner
	// Value is the joiner: an expression over stream (the record's value),
	// table (the table's value for the key, nil where it holds none) and
	// key; empty checks the joined records' presence, keys and timestamps.
	Value string `yaml:"value"`
	// OutputSteps are the processors between the join and to(Output).
	OutputSteps []*Step `yaml:"output_steps"`
	// Serdes are the output's (Produced.with), over the spec's defaults.
	Serdes *Serdes `yaml:"serdes"`
	Line   int     `yaml:"-"`
	// Unsettled lists, for a draft, what the evidence did not settle.
	Unsettled []string `yaml:"-"`
	// side is the stream side as a table's chain (its steps, compiled and
	// applied as a table's are), with the output steps.
	side *TableSpec
	prog *vm.Program
}

// Name names the join in findings and reasons.
func (j *StreamJoinSpec) Name() string { return "stream join into " + j.Output }

// Apply runs the stream side's steps on one record: the elements that
// reach the join, keyed as the join looks the table up.
func (j *StreamJoinSpec) Apply(r RecordEnv) ([]Element, error) { return j.side.Apply(r) }

// HasSteps reports whether the stream side has steps.
func (j *StreamJoinSpec) HasSteps() bool { return len(j.Steps) > 0 }

// ValueChanging reports whether the stream side's steps may change values.
func (j *StreamJoinSpec) ValueChanging() bool { return j.side.ValueChanging() }

// ApplyOutput runs the output steps on one joined record.
func (j *StreamJoinSpec) ApplyOutput(r RecordEnv) ([]Element, error) { return j.side.ApplyOutput(r) }

// OutputKeyChanging reports whether the output steps may change the key.
func (j *StreamJoinSpec) OutputKeyChanging() bool { return j.side.OutputKeyChanging() }

// HasValue reports whether the spec states the joiner.
func (j *StreamJoinSpec) HasValue() bool { return j.prog != nil }

// Join is the joiner on one stream value and the table's value (nil:
// the table holds none for the key).
func (j *StreamJoinSpec) Join(key, stream, table any) (any, error) {
	if j.prog == nil {
		return nil, ErrNoValue
	}
	out, err := expr.Run(j.prog, map[string]any{"key": toExpr(key), "stream": toExpr(stream), "table": toExpr(table)})
	if err != nil {
		return nil, fmt.Errorf("%s: value: %w", j.Name(), err)
	}
	return fromExpr(out)
}

// NotModelled lists the steps (output steps included) kaudit cannot
// evaluate.
func (j *StreamJoinSpec) NotModelled() []*Step { return j.side.NotModelled() }

// streamJoinEnv is a stream-table joiner's environment
// (ValueJoinerWithKey: the key, the stream's value, the table's).
func streamJoinEnv() types.Map {
	return types.Map{"key": types.Any, "stream": types.Any, "table": types.Any}
}

// validateStreamJoins checks the stream joins and compiles their
// expressions; names are the tables' names.
func (s *Spec) validateStreamJoins(l *errList, names map[string]bool) {
	for i, j := range s.StreamJoins {
		path := fmt.Sprintf("$.stream_joins[%d]", i)
		field := fmt.Sprintf("stream_joins[%d]", i)
		if j == nil {
			l.add(path, field, "empty stream join")
			continue
		}
		j.Line = s.line(path)
		if j.Line == 0 {
			j.Line = s.line(path + ".output")
		}
		if j.Output == "" {
			l.add(path+".output", field+".output", "required: the topic the joined stream is written to")
		}
		if len(j.StreamList) > 0 {
			j.Stream, j.Merged = j.StreamList[0], slices.Clone(j.StreamList[1:])
		}
		if j.Stream == "" {
			l.add(path+".stream", field+".stream", "required: the stream's source topic (or a list of the topics merged into it)")
		}
		switch {
		case j.Table == "":
			l.add(path+".table", field+".table", "required: the table the stream looks up (a name of tables:)")
		case !names[j.Table]:
			l.add(path+".table", field+".table", "no table named %q", j.Table)
		}
		if t := s.Table(j.Table); t != nil && t.Window != nil {
			l.add(path+".table", field+".table", "table %q is windowed: a stream cannot join a windowed table", j.Table)
		}
		switch j.Type {
		case "":
			j.Type = JoinLeft
		case JoinLeft, JoinInner:
		default:
			l.add(path+".type", field+".type", "unknown stream-table join type %q (want left or inner)", j.Type)
		}
		j.side = &TableSpec{Name: j.Name(), SourceList: j.StreamList, Source: j.Stream, Merged: j.Merged, Steps: j.Steps, OutputSteps: j.OutputSteps, Line: j.Line}
		s.validateSteps(l, path, field, j.side)
		switch {
		case isTODO(j.Value):
			l.add(path+".value", field+".value", "still TODO: write the joiner expression or remove the field")
		case j.Value != "":
			prog, err := compile(j.Value, streamJoinEnv())
			if err != nil {
				l.add(path+".value", field+".value", "%v", err)
			}
			j.prog = prog
		}
		if j.Serdes != nil {
			for _, kv := range [][2]string{{"key", j.Serdes.Key}, {"value", j.Serdes.Value}} {
				if codec.CheckSerde(kv[1]) != nil {
					l.add(path+".serdes."+kv[0], field+".serdes."+kv[0], "unknown serde %q", kv[1])
				}
			}
		}
	}
}

// PlannedStreamJoin is one stream-table join with its topics resolved.
type PlannedStreamJoin struct {
	Spec   *StreamJoinSpec `json:"-"`
	Output string          `json:"output"`
	Stream string          `json:"stream"`
	Merged []string        `json:"merged,omitempty"`
	// Repartition is the topic Streams repartitions the stream through
	// before the join ("" when the stream reaches the join on its source
	// partitions).
	Repartition string   `json:"repartition,omitempty"`
	Table       string   `json:"table"`
	Type        JoinType `json:"type"`
	// Node is the join's processor in the topology ("" without one);
	// Chain the processors from the stream's source to it, OutputChain
	// those from it to the output.
	Node        string               `json:"node,omitempty"`
	Chain       []topology.ChainNode `json:"chain,omitempty"`
	OutputChain []topology.ChainNode `json:"output_chain,omitempty"`
	// Unjudged says why the join cannot be judged ("" judges it).
	Unjudged string `json:"unjudged,omitempty"`
}

// resolveStreamJoin resolves one stream join: with a topology, its join
// node is the stream-table join that looks the table's store up and
// reaches the output, and the steps are matched to the chains on either
// side of it.
func (p *Plan) resolveStreamJoin(lay *topology.Layout, j *StreamJoinSpec, field string, fail func(line int, field, format string, args ...any)) (PlannedStreamJoin, bool) {
	pj := PlannedStreamJoin{Spec: j, Output: j.Output, Stream: j.Stream, Merged: slices.Clone(j.Merged), Repartition: j.Repartition, Table: j.Table, Type: j.Type}
	name := j.Name()
	if len(j.Unsettled) > 0 {
		pj.Unjudged = fmt.Sprintf("%s is not judged: the evidence does not settle %s", name, strings.Join(j.Unsettled, " and "))
	}
	pt := p.Table(j.Table)
	if pt == nil {
		return pj, false // reported with the table
	}
	nodes := map[*Step]string{}
	if lay == nil {
		if pj.Repartition == "" && slices.ContainsFunc(j.Steps, func(st *Step) bool { return st.Kind.KeyChanging() }) && pj.Unjudged == "" {
			pj.Unjudged = fmt.Sprintf("%s: its steps change the key, so Streams repartitions the stream before the join; name that topic with repartition: (or give the topology)", name)
		}
	} else {
		if u, ok := lay.Topic(j.Output); !ok || u.Role != topology.RoleOutput {
			fail(j.Line, field+".output", "the topology writes no output topic %q", j.Output)
			return pj, false
		}
		var cands []string
		for _, ju := range lay.Joins {
			if ju.Kind == topology.JoinStreamTable && slices.Contains(ju.RightStores, pt.Store) && slices.Contains(ju.Outputs, j.Output) {
				cands = append(cands, ju.Node)
			}
		}
		switch len(cands) {
		case 0:
			fail(j.Line, field+".table", "the topology has no stream-table join that looks up store %s (table %s) and writes %s", pt.Store, j.Table, j.Output)
			return pj, false
		case 1:
			pj.Node = cands[0]
		default:
			fail(j.Line, field, "several stream-table joins of the topology look up store %s and write %s (%s): kaudit cannot tell which this is", pt.Store, j.Output, strings.Join(cands, ", "))
			return pj, false
		}
		why := ""
		chain, hops, err := lay.NodeChain(j.Stream, pj.Node)
		switch {
		case err != nil:
			why = err.Error()
		case len(hops) > 1:
			why = fmt.Sprintf("the stream crosses %d internal topics (%s) before the join, which kaudit does not model", len(hops), strings.Join(hops, ", "))
		default:
			if len(hops) == 1 && pj.Repartition == "" {
				pj.Repartition = hopName(p.AppID, hops[0])
			}
			pj.Chain = chain
			if len(j.Merged) > 0 {
				if len(chain) == 0 || chain[0].Op != topology.OpMerge || lay.MergeInputs(chain[0].Name) != 1+len(j.Merged) {
					why = fmt.Sprintf("stream: names %d topics, but the topology's chain to %s does not begin with their merge", 1+len(j.Merged), pj.Node)
					break
				}
				chain = chain[1:]
			}
			if w := matchChain(j.side.Chain(), chain, nodes); w != "" {
				why = fmt.Sprintf("between %s and the join %s %s", j.Stream, pj.Node, w)
			}
		}
		if why == "" {
			oc, err := lay.ChainFrom(pj.Node, j.Output)
			switch {
			case err != nil:
				why = err.Error()
			default:
				pj.OutputChain = oc
				if w := matchChain(j.OutputSteps, oc, nodes); w != "" {
					why = fmt.Sprintf("between the join %s and %s %s", pj.Node, j.Output, w)
				}
			}
		}
		if why != "" && pj.Unjudged == "" {
			pj.Unjudged = fmt.Sprintf("%s is not judged: %s", name, why)
		}
	}
	if j.OutputKeyChanging() && pj.Unjudged == "" {
		pj.Unjudged = fmt.Sprintf("%s is not judged: its output steps change the key, which kaudit does not model", name)
	}
	if why := unmodelled(j.side, nodes); why != "" && pj.Unjudged == "" {
		pj.Unjudged = why
	}
	return pj, true
}
