// Package draft infers an app's spec from its topology and its evidence:
// Infer returns it as a Draft, a value whose every table, step, key,
// reducer, window, join and output is a guess with the evidence it rests
// on, or unknown with the reason. kaudit init prints it (WriteYAML: a
// kaudit.yaml whose comments give the evidence and whose TODOs the
// unknowns), and kaudit diff without --spec audits with it (Spec), never
// through the YAML.
package draft

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/discovery"
	"github.com/kaudit/kaudit/audit/infer"
	"github.com/kaudit/kaudit/audit/spec"
	"github.com/kaudit/kaudit/audit/topology"
)

// Options say what to draft from.
type Options struct {
	AppID string
	// TopologyFile is a Topology#describe() text file; "" takes the one
	// the source carries, else none.
	TopologyFile string
	// Topology and Discovery are what the caller already read of the
	// topology (from TopologyFile, or the one the source carries) and of
	// the source (discovery.Discover with that topology), so that they
	// are read once; nil: Infer reads them.
	Topology  *topology.Topology
	Discovery *discovery.Discovery
	// KeySerde and ValueSerde are the serdes the caller names for the
	// draft; "" infers them from the evidence.
	KeySerde, ValueSerde string
	// Codec is how to decode the evidence (a registry, offline schemas,
	// client properties); its serdes are ignored.
	Codec codec.Config
	// SourceArgs are the command-line flags that name the source
	// ("--snapshot DIR"), written into the commands the draft's header
	// tells the user to run next; "" leaves them out.
	SourceArgs string
}

// Draft is an app's spec as the topology and the evidence tell it.
// Every part the spec needs is a Guess: a value with the evidence it
// rests on, or Unknown with why the evidence does not settle it. What
// rests on an unknown guess is not judged (Spec).
type Draft struct {
	AppID string
	// TopologyFile is the --topology file, written as topology: ("" for
	// none); Topology names the describe() text the draft read: the
	// file, "the snapshot's topology", or "" (none: the layout is drawn
	// from the topics' names and the node numbers).
	TopologyFile, Topology string
	// Source describes the source the draft read (audit.Source's
	// Describe), "" for the topology alone; Evidence says whether records
	// were read, so that the guesses rest on them.
	Source   string
	Evidence bool
	// Serdes are the app's default serdes, inferred from the evidence or
	// named by the caller; nil when neither says them.
	Serdes *Serdes
	// Tables are the stores the app folds, each a table (a KTable
	// groupBy's and a cogroup's too).
	Tables []Table
	// Joins are the table-table join chains to an output topic;
	// JoinsNote says, where none is drafted, why ("" when nothing is to
	// say).
	Joins     []Join
	JoinsNote string
	// StreamJoins are the stream-table joins, Copies the outputs the app
	// writes from one source topic through stateless steps only.
	StreamJoins []StreamJoin
	Copies      []Copy
	// Unknown lists what neither the topology nor the evidence tells
	// (discovery's, less what the draft found); Notes what reading the
	// evidence met (a topic not read, records not decoded).
	Unknown, Notes []string
	// sourceArgs are Options.SourceArgs, for the header's commands;
	// sourced says a source was read (Source describes it).
	sourceArgs string
	sourced    bool
}

// Guess is one part of the app the draft infers: Value, with the evidence
// it rests on; or, where the evidence does not settle it, Unknown.
type Guess struct {
	// Value is the guess: a topic, an expression, a serde, a reducer; ""
	// when there is none.
	Value string
	// Evidence says what the guess rests on; Explained and Of, where the
	// evidence was counted, how many records (copies, keys, windows) the
	// guess explains of how many it was measured on.
	Evidence      string
	Explained, Of int
	// Unknown says why the evidence does not settle the guess, and what
	// it may be (Candidates): kaudit init writes it as a TODO, and what
	// rests on it is not judged. "" when Value holds the guess, or when
	// there is nothing to guess.
	Unknown    string
	Candidates []string
}

// Known reports whether the evidence settles the guess.
func (g Guess) Known() bool { return g.Unknown == "" && g.Value != "" }

// Unsettled reports whether there is something to guess that the
// evidence does not settle.
func (g Guess) Unsettled() bool { return g.Unknown != "" }

// Serdes are an app's default serdes. Given says the caller named them
// (--key-serde, --value-serde) and no evidence was read to infer them.
type Serdes struct {
	Key, Value Guess
	Given      bool
}

// Chain is a stream from its source topic to what it feeds (a store, a
// join, to()): the topic, the topics merged into its stream, the
// stateless steps on the way.
type Chain struct {
	// Source is the topic it reads, with how it was found; Unknown where
	// the evidence does not say which (then Candidates).
	Source Guess
	Merged []string
	Steps  []Step
	// FromTopology says the steps are the topology's chain of nodes; else
	// the draft supposes them from the evidence alone.
	FromTopology bool
	// StepsUnknown says why the topology's chain is not known; NoSteps,
	// drafted without a topology, why no step is drafted where a
	// processor may stand.
	StepsUnknown, NoSteps string
}

// Step is one stateless processor of a chain: its kind, the topology's
// node it stands for ("" drafted without a topology), and its lambda as
// a guess (unknown: not judged until answered). A peek has no lambda; a
// Processor API node (spec.StepProcess) none that kaudit models, and
// Expr.Evidence says so.
type Step struct {
	Kind spec.StepKind
	Node string
	Expr Guess
}

// Table is one table of the draft: a store the app folds from a chain
// (Chain, SelectKey, Window, Reduce), a KTable groupBy's (Regroup) or a
// cogroup's (Cogroup).
type Table struct {
	Name string
	Chain
	// SelectKey is the new key its chain computes: "key" where the key is
	// unchanged; none where the steps give it.
	SelectKey Guess
	// Window is its TimeWindows, nil for a store of plain keys.
	Window *Window
	// Reduce is its reducer ("table" for builder.table()).
	Reduce Guess
	// Store and Changelog are its store and the store's changelog;
	// Repartition its repartition topic where no topology names it.
	Store, Changelog, Repartition string
	// Serdes and StoreSerdes are the value serdes of its own topics and
	// of its changelog where they are not the app's.
	Serdes, StoreSerdes Guess
	// Output is where its changes are written (toStream().to()), nil for
	// none.
	Output  *Output
	Regroup *Regroup
	Cogroup *Cogroup
}

// Window is a windowed store's TimeWindows: its size and advance in
// milliseconds (0 where the evidence does not settle them: Unknown says
// what they may be), its grace never (the evidence does not show it).
type Window struct {
	Size, Advance int64
	// Keys says why the store is a window store (its changelog's keys);
	// Evidence what the size and advance rest on, Explained and Of how
	// many windows they explain of how many.
	Keys, Evidence string
	Explained, Of  int
	Unknown        string
	Candidates     []string
	// Suppressed says a suppress() follows the store: its output is left
	// out, for it needs the grace.
	Suppressed bool
}

// Output is a table's output topic and the steps between its toStream()
// and to(): FromTopology the topology's, else found from the records
// (Evidence says how).
type Output struct {
	Topic        string
	Evidence     string
	FromTopology bool
	// Serdes is the output's value serde where it is not the store's.
	Serdes Guess
	Steps  []Step
	// TableSteps are the KTable filters and mapValues between the store
	// and toStream() (table_steps:).
	TableSteps []Step
}

// Regroup is a KTable groupBy: the table it re-groups (Of) through its
// KTABLE-SELECT node, the mapper's key (Table.SelectKey) and the
// aggregation (Table.Reduce: count, or the sum of the field Sum).
type Regroup struct {
	Of, Node string
	Sum      string
}

// Cogroup is a cogroup's grouped streams, each with its aggregator, and
// its initializer; drafted only where the evidence settles them all.
type Cogroup struct {
	Members []CogroupMember
	Init    string
}

// CogroupMember is one grouped stream of a cogroup: its chain, its key
// where it re-keys, its aggregator.
type CogroupMember struct {
	Chain
	SelectKey Guess
	Aggregate Guess
}

// Join is a chain of table-table joins written to an output topic.
// Skipped says why a join of the topology is not drafted (not a
// table-table join); its other fields are then empty.
type Join struct {
	Skipped string
	// Output is the topic, with how it was found (Evidence: the
	// topology's join nodes, or the keys that make it the tables');
	// Nodes are those nodes ("" found without a topology).
	Output Guess
	Nodes  []string
	// Left and Right are the tables joined: a name each, or unknown
	// where no drafted table holds the join's store.
	Left  Guess
	Right []Guess
	// Type and Value are the join's type and joiner; Fields what each
	// output field was matched to.
	Type, Value Guess
	Fields      []string
}

// StreamJoin is a stream-table join written to an output topic: its
// stream side (Chain), the table it looks up, its type (join(): inner,
// leftJoin(): left) and its joiner (never inferred: its presence is
// checked). Skipped says why it is not drafted (a GlobalKTable's).
type StreamJoin struct {
	Output, Node string
	Skipped      string
	Chain
	Table       Guess
	Type, Value Guess
}

// Copy is an output the app writes from one source topic through
// stateless steps only (builder.stream(s)…to(Output)).
type Copy struct {
	Chain
	Output string
}

// ErrNoTable is Spec's error for a draft with no table and no copy: the
// evidence shows no store the app folds from a source topic it reads.
var ErrNoTable = errors.New("the evidence shows no table the app folds (no store of the app is fed by a source topic it reads)")

// Infer drafts the app's spec from its topology (o.TopologyFile, or the
// one src carries) and from the evidence src holds; src may be nil (the
// topology alone: every lambda unknown).
func Infer(ctx context.Context, src audit.Source, o Options) (*Draft, error) {
	if o.AppID == "" {
		return nil, audit.UsageError{Err: errors.New("kaudit init needs --app-id ID")}
	}
	if o.TopologyFile == "" && src == nil {
		return nil, audit.UsageError{Err: errors.New("kaudit init needs --topology FILE or a source (--bootstrap-server, --snapshot, --log-dir)")}
	}
	s := &drafting{o: o, src: src, topo: o.Topology, d: o.Discovery, topoFrom: o.TopologyFile}
	if err := s.read(ctx); err != nil {
		return nil, err
	}
	s.structure()
	if err := s.inferEvidence(ctx); err != nil {
		return nil, err
	}
	return s.draft(ctx), nil
}

// Write writes a draft spec to w, as kaudit init prints it; src may be
// nil (the topology alone).
func Write(ctx context.Context, w io.Writer, src audit.Source, o Options) error {
	d, err := Infer(ctx, src, o)
	if err != nil {
		return err
	}
	return d.WriteYAML(w)
}

// drafting is a draft under way: what it read, the tables, joins and
// copies the topology and the topics' names show, and what the evidence
// tells of them.
type drafting struct {
	o        Options
	src      audit.Source
	topo     *topology.Topology
	topoFrom string
	d        *discovery.Discovery
	lay      *topology.Layout
	tables   []draftTable
	sjoins   []draftStreamJoin
	copies   []draftTable
	cogroups []draftCogroup
	inf      *inferred // nil when no evidence was read
}

// read reads the topology and discovers the app, where the caller has
// not.
func (s *drafting) read(ctx context.Context) error {
	switch {
	case s.topo != nil && s.o.TopologyFile == "":
		s.topoFrom = "the snapshot's topology"
	case s.topo != nil:
	case s.o.TopologyFile != "":
		t, err := topology.ReadFile(s.o.TopologyFile)
		if err != nil {
			return audit.UsageError{Err: err}
		}
		s.topo = t
	default:
		if text := audit.TopologyOf(s.src); text != "" {
			// a capture carries the app's describe() text
			t, err := topology.ParseString(text)
			if err != nil {
				return audit.NotRunError{Err: fmt.Errorf("parse the snapshot's topology: %w", err)}
			}
			s.topo, s.topoFrom = t, "the snapshot's topology"
		}
	}
	if s.d == nil && s.src != nil {
		d, err := discovery.Discover(ctx, s.src, s.o.AppID, s.topo)
		if err != nil {
			return audit.NotRunError{Err: fmt.Errorf("discover %s: %w", s.o.AppID, err)}
		}
		s.d = d
	}
	if s.topo != nil {
		s.lay = s.topo.Layout(s.o.AppID)
	} else {
		s.lay = s.d.NamingLayout()
	}
	return nil
}

// structure drafts what the topology (or, without one, the topics'
// names) shows: the tables and their chains, the stream joins, the
// copies and the cogroups.
func (s *drafting) structure() {
	s.tables = draftTables(s.lay, s.topo != nil, s.d)
	if s.topo == nil {
		unseen := unseenSteps(s.o.AppID, s.lay)
		for i := range s.tables {
			t := &s.tables[i]
			if c, ok := unseen[t.store]; ok || t.rekeyed {
				t.unseen, t.unseenExtra = c.why, c.extra
				if !ok {
					t.unseen, t.unseenExtra = "its store's name carries no number Kafka Streams generated, so nothing rules out a processor between its source and the re-key", -1
				}
			}
		}
	}
	s.sjoins = draftStreamJoins(s.lay, s.tables)
	if s.topo != nil {
		s.copies = draftCopies(s.lay)
		s.cogroups = draftCogroups(s.lay, s.tables)
	}
}

// inferEvidence fills in what the evidence tells of the tables, the
// stream joins' sides, the copies and the cogroups' grouped streams,
// each inferred as a table's chain is (a copy's output stands for the
// repartition copies).
func (s *drafting) inferEvidence(ctx context.Context) error {
	if s.src == nil || len(s.tables)+len(s.copies) == 0 {
		return nil
	}
	var outputs []string
	for _, u := range s.lay.Topics {
		if u.Role == topology.RoleOutput && !u.Pattern {
			outputs = append(outputs, u.Name)
		}
	}
	all := s.chains()
	inf, err := inferTables(ctx, s.o, s.src, all, outputs)
	s.inf = inf
	if err == nil && inf != nil && inf.ev != nil {
		for _, i := range defaultBranches(s.lay, all) {
			stepsAgain(&all[i], inf.ev)
		}
		for i := range all {
			if err == nil && all[i].regroup != nil {
				err = checkRegroupChanges(ctx, s.src, s.lay, &all[i])
			}
		}
		if err == nil {
			for i := range all {
				windowedOutputFilter(s.lay, &all[i], inf.ev)
			}
		}
	}
	s.unchain(all, err == nil && inf != nil && inf.ev != nil)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	}
	var ue audit.UsageError
	if errors.As(err, &ue) {
		return err
	}
	return audit.NotRunError{Err: err}
}

// chains lists every chain the evidence is read for, in order: the
// tables, the stream joins' sides, the copies, the cogroups' grouped
// streams.
func (s *drafting) chains() []draftTable {
	all := append([]draftTable(nil), s.tables...)
	for _, sj := range s.sjoins {
		all = append(all, sj.side)
	}
	all = append(all, s.copies...)
	for _, cg := range s.cogroups {
		all = append(all, cg.members...) // each grouped stream as a table's chain
	}
	for i := range all {
		all[i].suppressed = suppressedAfter(s.lay, all[i].store)
	}
	return all
}

// unchain puts the chains inferred back in their places (chains' order),
// and, with the evidence read, settles each cogroup's aggregators.
func (s *drafting) unchain(all []draftTable, read bool) {
	s.tables = all[:len(s.tables)]
	for i := range s.sjoins {
		s.sjoins[i].side = all[len(s.tables)+i]
	}
	n := len(s.tables) + len(s.sjoins) + len(s.copies)
	s.copies = all[len(s.tables)+len(s.sjoins) : n]
	for i := range s.cogroups {
		cg := &s.cogroups[i]
		cg.members = all[n : n+len(cg.members)]
		n += len(cg.members)
		if !read {
			continue
		}
		for _, t := range s.tables {
			if t.name == cg.table {
				inferCogroup(cg, t.changelog, s.inf.ev)
				break
			}
		}
	}
}

// draftTable is one table of the draft under way, and the chains the
// evidence is read for as a table's is (a stream join's side, a copy, a
// cogroup's grouped stream).
type draftTable struct {
	name, source string
	merged       []string // further sources merged into source's stream (source: [a, b])
	evSource     string   // the evidence's topic of its inputs (sources merged: their union)
	candidates   []string // when the source is not known
	store        string
	changelog    string
	repartition  string
	rekeyed      bool
	tableSource  bool // builder.table() or toTable(): no reducer to decide
	// regroupOf is, for a KTable groupBy's store, the drafted table it
	// re-groups (regroup:), and regroupNode its KTABLE-SELECT node
	regroupOf, regroupNode string
	regroup                *infer.RegroupGuess
	// chain is the topology's chain of processors from the source to the
	// store; chainErr why it is not known
	chain    []topology.ChainNode
	chainErr string
	// inferred from the evidence (kaudit init with a source);
	// sourceMatched is how many of the repartition copies the source's
	// records match, of how many
	sourceNote    string
	sourceMatched [2]int
	selectKey     infer.Guess
	reduce        *infer.Guess
	steps         []draftStep // the chain's steps, as far as the evidence tells them
	// window is, for a store whose changelog keys are a window store's,
	// what the evidence tells of its TimeWindows and reducer; suppressed
	// says a suppress() follows the store (its output needs the grace)
	window     *infer.WindowGuess
	windowNote string
	suppressed bool
	// outputFilter is the filter between a windowed store and its output,
	// inferred from the states that reached the output
	outputFilter *infer.Guess
	// tableOutput is what the states that reached the output tell of a
	// KTable filter before toStream(), a filter after it and a re-keying
	// map or selectKey (GuessTableOutput)
	tableOutput *infer.TableOutputGuess
	// unseen says, drafted without a topology, why a processor may stand
	// between the source and the re-key ("" when the node numbers rule
	// one out: unseenSteps); unseenExtra how many nodes more than its
	// chain needs stand below its store (-1: not known)
	unseen      string
	unseenExtra int
	unseenNote  string // what the evidence says of a filter there (unseenFilter)
}

// draftStep is one step of a drafted chain: its kind and expression (""
// while the evidence does not tell it: open), the node it stands for, and
// what the guess rests on, or, while open, what the expression must say.
type draftStep struct {
	kind spec.StepKind
	expr string
	node string
	note string
	// splitter is, for a branch, the split()'s own node (node is the
	// branch's)
	splitter string
	// matched is how many records the expression explains, of how many,
	// where counted
	matched [2]int
}

// open reports whether the step's lambda is still to be told: a peek
// has none, nor a Processor API node that kaudit models.
func (s draftStep) open() bool {
	return s.expr == "" && s.kind != spec.StepPeek && s.kind != spec.StepProcess
}
