package diff

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/kaudit/kaudit/audit/spec"

	"github.com/kaudit/kaudit/audit/discovery"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/draft"
	"github.com/kaudit/kaudit/audit/reconcile"
	"github.com/kaudit/kaudit/audit/topology"
)

// Setup is what an audit checks, resolved on the evidence: the engine's
// pipeline, the app's topics, the decoder, and the spec when there is one.
type Setup struct {
	Pipeline  *reconcile.Pipeline
	Discovery *discovery.Discovery
	Decoder   *codec.Codec
	Spec      *spec.Spec // nil without a spec
	Resolved  *spec.Plan // the spec resolved on the topology; nil without a spec
	// Warnings are notes for the report: where the spec and the evidence
	// disagree on the app's layout.
	Warnings []string
	unjudged []string // why tables and joins are not judged (checkSpec)
	// Draft is the spec kaudit drafted from the evidence for want of
	// --spec, each guess with its evidence, and Inferred it as kaudit init
	// prints it (the YAML); nil and "" with a spec. notInferred says why
	// none could be drafted.
	Draft       *draft.Draft
	Inferred    string
	notInferred string
	// topoFrom says which describe() text the spec was resolved on: the
	// --topology file, the capture's, or "" for none
	topoFrom string
}

// prepareKeyless is Prepare's end without a spec: the checks that need
// no key.
func prepareKeyless(s *Setup, ev Evidence, o Options, d *discovery.Discovery) (*Setup, error) {
	s.Pipeline = keylessPipeline(o.AppID, d)
	cfg := o.Codec
	cfg.KeySerde, cfg.ValueSerde = first(cfg.KeySerde, "string"), first(cfg.ValueSerde, "bytes")
	var err error
	if s.Decoder, err = codec.NewWithSchemas(cfg, audit.SchemasOf(ev.Source)); err != nil {
		return nil, err
	}
	return s, nil
}

// inferSpec drafts the app's spec from the evidence, as kaudit init
// does, on the topology and discovery the audit read, and builds the spec
// from the draft (Draft.Spec; o.specOfDraft in tests): what the evidence
// does not settle leaves its table or join unjudged. text is the draft as
// kaudit init prints it, for the report.
func inferSpec(ctx context.Context, src audit.Source, o Options, topo *topology.Topology, d *discovery.Discovery) (dr *draft.Draft, sp *spec.Spec, text string, err error) {
	dr, err = draft.Infer(ctx, src, draft.Options{AppID: o.AppID, TopologyFile: o.TopologyFile, Topology: topo, Discovery: d,
		KeySerde: o.Codec.KeySerde, ValueSerde: o.Codec.ValueSerde, Codec: o.Codec})
	if err != nil {
		return nil, nil, "", fmt.Errorf("draft a spec from the evidence: %w", err)
	}
	var b strings.Builder
	if err := dr.WriteYAML(&b); err != nil {
		return nil, nil, "", err
	}
	specOf := o.specOfDraft
	if specOf == nil {
		specOf = func(dr *draft.Draft, _ string) (*spec.Spec, error) { return dr.Spec() }
	}
	sp, err = specOf(dr, b.String())
	switch {
	case errors.Is(err, draft.ErrNoTable):
		return nil, nil, "", err
	case err != nil:
		return nil, nil, "", fmt.Errorf("the spec drafted from the evidence does not load: %w", err)
	}
	return dr, sp, b.String(), nil
}

// Prepare resolves the spec (or, without one, the keyless checks) on what
// the source holds, and builds the decoder.
func Prepare(ctx context.Context, ev Evidence, o Options) (*Setup, error) {
	var sp *spec.Spec
	if o.SpecFile != "" {
		var err error
		if sp, err = spec.LoadSpec(o.SpecFile); err != nil {
			return nil, audit.UsageError{Err: err}
		}
		o.AppID = cmp.Or(o.AppID, sp.AppID)
		o.TopologyFile = cmp.Or(o.TopologyFile, sp.TopologyPath())
	}
	topo, err := TopologyFor(o.TopologyFile, ev.Source)
	if err != nil {
		return nil, err
	}
	if err := checkApp(ctx, ev.Source, o.AppID); err != nil {
		return nil, err
	}
	d, err := discovery.Discover(ctx, ev.Source, o.AppID, topo)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, audit.NotRunError{Err: fmt.Errorf("discover app %s: %w", o.AppID, err)}
	}
	s := &Setup{Discovery: d}
	switch {
	case o.TopologyFile != "":
		s.topoFrom = "--topology " + o.TopologyFile
	case topo != nil:
		s.topoFrom = "the capture's describe() text"
	}
	if sp == nil && o.AppID != "" && !o.Keyless {
		// no spec: the one kaudit init would draft, from the same evidence
		if s.Draft, sp, s.Inferred, err = inferSpec(ctx, ev.Source, o, topo, d); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			s.notInferred = err.Error()
		}
	}
	keySerde, valSerde, topics := "string", "", map[string]codec.TopicSerdes{}
	if sp == nil {
		s.Pipeline = keylessPipeline(o.AppID, d)
	} else {
		rp, err := spec.Resolve(sp, topo, o.AppID)
		if err != nil && s.Draft != nil {
			// a draft the topology refutes: what needs no key still runs
			s.notInferred = err.Error()
			sp, s.Draft, s.Inferred = nil, nil, ""
			return prepareKeyless(s, ev, o, d)
		}
		if err != nil {
			return nil, audit.UsageError{Err: err}
		}
		for _, u := range sp.Dropped {
			s.unjudged = append(s.unjudged, u)
		}
		s.unjudged = append(s.unjudged, rp.Uncovered...)
		if err := discovery.CheckPlan(sp, d, rp); err != nil {
			s.Warnings = append(s.Warnings, err.Error())
		}
		s.Warnings = append(s.Warnings, rp.Warnings...)
		keySerde, valSerde = first(sp.Serdes.Key, "string"), sp.Serdes.Value
		for topic, sd := range rp.TopicSerdes() {
			topics[topic] = codec.TopicSerdes{Key: sd.Key, Value: sd.Value}
		}
		s.Pipeline = reconcile.FromPlan(rp, keySerde)
		s.Spec, s.Resolved = sp, rp
		s.inferredJoinsOverUnjudged()
	}
	cfg := o.Codec
	cfg.Topics = topics
	cfg.KeySerde, cfg.ValueSerde = first(cfg.KeySerde, keySerde, "string"), first(cfg.ValueSerde, valSerde, "bytes")
	if s.Decoder, err = codec.NewWithSchemas(cfg, audit.SchemasOf(ev.Source)); err != nil {
		return nil, err
	}
	return s, nil
}

// checkApp refuses an application id the evidence holds nothing of (a
// typo: no group, no internal topic, no transactional id of it) with a
// usage error naming the groups there are and the nearest one. A group
// the source could not read (log dirs without its __consumer_offsets
// partition) is no proof that it does not exist: the audit runs, its cut
// missing evidence.
func checkApp(ctx context.Context, src audit.Source, appID string) error {
	if appID == "" {
		return nil
	}
	_, err := src.GroupOffsets(ctx, appID)
	if err == nil || !errors.Is(err, audit.ErrGroupNotFound) || errors.Is(err, audit.ErrNotSupported) || errors.Is(err, audit.ErrUnreadable) {
		return nil
	}
	if err := discovery.CheckAppID(ctx, src, appID); errors.Is(err, discovery.ErrUnknownApp) {
		return audit.UsageError{Err: fmt.Errorf("--app-id %s: %w", appID, err)}
	}
	return nil
}

// keylessPipeline is the checks that need no key, on the topics'
// roles: each existing source, repartition and changelog topic a table of
// its own, the outputs as outputs.
func keylessPipeline(appID string, d *discovery.Discovery) *reconcile.Pipeline {
	p := &reconcile.Pipeline{AppID: appID, Keyless: true}
	for _, t := range d.Topics {
		if !t.Exists {
			continue
		}
		switch t.Role {
		case topology.RoleSource:
			p.Tables = append(p.Tables, reconcile.Table{Name: t.Name, Source: t.Name})
		case topology.RoleRepartition:
			p.Tables = append(p.Tables, reconcile.Table{Name: t.Name, Repartition: t.Name})
		case topology.RoleChangelog:
			p.Tables = append(p.Tables, reconcile.Table{Name: t.Name, Changelog: t.Name})
		case topology.RoleOutput:
			p.Outputs = append(p.Outputs, t.Name)
		}
	}
	return p
}

// TopologyFor is the app's topology: from file when one is named, else
// the describe() text src carries, else nil.
func TopologyFor(file string, src audit.Source) (*topology.Topology, error) {
	if file != "" {
		return loadTopology(file)
	}
	text := ""
	if src != nil {
		text = audit.TopologyOf(src)
	}
	if text == "" {
		return nil, nil
	}
	t, err := topology.ParseString(text)
	if err != nil {
		return nil, audit.NotRunError{Err: fmt.Errorf("parse the snapshot's topology: %w", err)}
	}
	return t, nil
}

// loadTopology reads a describe() text file; what is wrong with it is
// the caller's.
func loadTopology(path string) (*topology.Topology, error) {
	t, err := topology.ReadFile(path)
	if err != nil {
		return nil, audit.UsageError{Err: err}
	}
	return t, nil
}

// ParseWhen reads a duration ago (counted back from now: 90m, 24h, and
// days and weeks, 1d, 2w, 1d12h) or an RFC 3339 time; "" is the zero
// time.
func ParseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := ParseAgo(s); err == nil {
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a duration (90m, 24h, 1d, 2w) nor an RFC 3339 time", s)
	}
	return t, nil
}

// ParseAgo reads a duration as time.ParseDuration does, with days (d,
// 24h) and weeks (w, 7d) before the other units: 1d, 2w, 1d12h.
func ParseAgo(s string) (time.Duration, error) {
	var days int64
	rest := s
	for _, u := range []struct {
		unit string
		days int64
	}{{"w", 7}, {"d", 1}} {
		if i := strings.Index(rest, u.unit); i > 0 {
			n, err := strconv.ParseInt(rest[:i], 10, 32)
			if err != nil || n < 0 {
				return 0, fmt.Errorf("%q: want a duration such as 90m, 24h, 1d or 2w", s)
			}
			days += n * u.days
			rest = rest[i+1:]
		}
	}
	var d time.Duration
	if rest != "" {
		var err error
		if d, err = time.ParseDuration(rest); err != nil {
			return 0, fmt.Errorf("%q: want a duration such as 90m, 24h, 1d or 2w", s)
		}
		if days > 0 && d < 0 {
			return 0, fmt.Errorf("%q: want a duration such as 90m, 24h, 1d or 2w", s)
		}
	}
	return time.Duration(days)*24*time.Hour + d, nil
}

// windowNote says which window since and until judged, from which clock,
// and how many inputs fell inside it (from the timeline, by minute: the
// minutes the window's edges cut count as a range).
func windowNote(since, until, clock time.Time, clockName string, tl []audit.Minute) string {
	from, to := "the first input", "the last"
	sinceMs, untilMs := int64(math.MinInt64), int64(math.MaxInt64)
	if !since.IsZero() {
		from, sinceMs = since.UTC().Format(time.RFC3339), since.UnixMilli()
	}
	if !until.IsZero() {
		to, untilMs = until.UTC().Format(time.RFC3339), until.UnixMilli()
	}
	lo, hi := int64(0), int64(0)
	for _, m := range tl {
		start, end := m.Start, m.Start+60_000
		switch {
		case start >= sinceMs && end <= untilMs:
			lo += m.Produced
			hi += m.Produced
		case end > sinceMs && start < untilMs:
			hi += m.Produced // the window cuts this minute
		}
	}
	n := fmt.Sprintf("%d inputs fell inside it", lo)
	if hi != lo {
		n = fmt.Sprintf("%d to %d inputs fell inside it (the window cuts a minute of the timeline)", lo, hi)
	}
	if hi == 0 {
		n = "no input fell inside it: no record was judged, so a clean verdict says nothing about this window"
	}
	return fmt.Sprintf("judged the inputs with timestamps from %s to %s (durations count back from %s, %s); %s",
		from, to, clockName, clock.UTC().Format(time.RFC3339), n)
}

// first is the first of s that is not blank.
func first(s ...string) string {
	for _, x := range s {
		if strings.TrimSpace(x) != "" {
			return x
		}
	}
	return ""
}
