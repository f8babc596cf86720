package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/infer"
	"github.com/kaudit/kaudit/audit/topology"
)

// specCheck is what checking a spec against the evidence found.
type specCheck struct {
	notes    []string
	tables   []infer.Verdict
	joins    []infer.Verdict
	unjudged []string
}

// checkSpecEvidence reads the evidence a resolved spec needs and checks
// it: fields named by expressions that the values lack are a spec error
// (exit 2); reducers and join values the evidence contradicts are
// reported unjudged.
func checkSpecEvidence(ctx context.Context, spec *topology.Spec, rp *topology.Plan, src audit.RecordSource, dec *codec.Codec) (*specCheck, error) {
	ev, err := infer.Load(ctx, src, dec, rp, 0)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return &specCheck{notes: []string{"the spec was not checked against the evidence: " + err.Error()}}, nil
	}
	c := &specCheck{}
	notes, err := infer.CheckFields(spec, rp, ev)
	if err != nil {
		return nil, usageError{fmt.Errorf("the spec does not describe the app's records:\n%w", err)}
	}
	c.notes = notes
	for _, pt := range rp.Tables {
		v := infer.CheckTable(pt, ev)
		c.tables = append(c.tables, v)
		if v.Unjudged != "" {
			c.unjudged = append(c.unjudged, v.Unjudged)
		}
	}
	for _, pj := range rp.Joins {
		v := infer.CheckJoin(pj, rp, ev, outputOrder(ctx, ev.Topics[pj.Output], dec))
		c.joins = append(c.joins, v)
		if v.Unjudged != "" {
			c.unjudged = append(c.unjudged, v.Unjudged)
		}
	}
	return c, nil
}

// outputOrder is the field order of a topic's first record value.
func outputOrder(ctx context.Context, t *infer.Topic, dec *codec.Codec) []string {
	if t == nil {
		return nil
	}
	for _, r := range t.Records() {
		if r.RawValue != nil {
			return infer.FieldOrder(r.RawValue, func(id int32) (string, bool) {
				s, err := dec.Schema(ctx, id)
				return s.Schema, err == nil
			})
		}
	}
	return nil
}

// checkSpec runs the spec check of kaudit diff before it judges: the
// tables and joins the evidence contradicts are not judged.
func checkSpec(ctx context.Context, pl *plan, src *openedSource, dec *codec.Codec, log func(string)) error {
	if pl.spec == nil || pl.resolved == nil {
		return nil
	}
	c, err := checkSpecEvidence(ctx, pl.spec, pl.resolved, src, dec)
	if err != nil {
		return err
	}
	pl.warnings = append(pl.warnings, c.notes...)
	for i, v := range c.tables {
		if v.Unjudged == "" {
			continue
		}
		t := &pl.pipeline.Tables[i]
		t.Unjudged = v.Unjudged
		// until the engine honours Unjudged: no state check on a reducer
		// the evidence contradicts
		t.Reduce, t.Latest, t.OrderDependent = nil, false, false
		if log != nil {
			log(v.Unjudged)
		}
	}
	for i, v := range c.joins {
		if v.Unjudged == "" {
			continue
		}
		j := &pl.pipeline.Joins[i]
		j.Unjudged = v.Unjudged
		j.Value = nil
		if log != nil {
			log(v.Unjudged)
		}
	}
	pl.unjudged = c.unjudged
	return nil
}

// addUnjudged puts the reasons why tables and joins were not judged into
// the report's missing evidence (the verdict is then at best incomplete),
// once.
func addUnjudged(rep *audit.Report, unjudged []string) {
	for _, u := range unjudged {
		found := false
		for _, m := range rep.Summary.Missing {
			if strings.Contains(m, u) {
				found = true
				break
			}
		}
		if !found {
			rep.Summary.Missing = append(rep.Summary.Missing, u)
		}
	}
}
