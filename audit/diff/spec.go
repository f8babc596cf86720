package diff

import (
	"context"
	"fmt"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/infer"
)

// SpecCheck is what checking a spec against the evidence found.
type SpecCheck struct {
	Notes    []string
	Keys     []infer.Verdict // select_key, per table of the resolved spec
	Tables   []infer.Verdict // reducers, per table
	Joins    []infer.Verdict // per join
	Unjudged []string        // why tables and joins would not be judged
	Unread   error           // the evidence could not be read
}

// CheckSpec reads the evidence the resolved spec needs and checks it:
// fields named by expressions that the values lack are a spec error
// (audit.UsageError); reducers and join values the evidence contradicts
// are unjudged. s must hold a spec.
func CheckSpec(ctx context.Context, s *Setup, src audit.RecordSource) (*SpecCheck, error) {
	ev, err := infer.Load(ctx, src, s.Decoder, s.Resolved, 0)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return &SpecCheck{Notes: []string{"the spec was not checked against the evidence: " + err.Error()}, Unread: err}, nil
	}
	c := &SpecCheck{}
	notes, err := infer.CheckFields(s.Spec, s.Resolved, ev)
	if err != nil {
		return nil, audit.UsageError{Err: fmt.Errorf("the spec does not describe the app's records:\n%w", err)}
	}
	c.Notes = notes
	for _, pt := range s.Resolved.Tables {
		if pt.Spec != nil && pt.Spec.Window != nil {
			// a window store's keys carry the window start and a sequence
			// number: the window and reducer are checked on its windows
			// (infer.CheckWindow); the key is the audit's to judge
			k := infer.Verdict{Name: pt.Name, Note: "windowed: not checked against the evidence (the audit judges each window)"}
			v := k
			if pt.Unjudged == "" {
				v = infer.CheckWindow(pt, ev)
			}
			c.Keys, c.Tables = append(c.Keys, k), append(c.Tables, v)
			if v.Unjudged != "" {
				c.Unjudged = append(c.Unjudged, v.Unjudged)
			}
			continue
		}
		if pt.Spec != nil && pt.Spec.Regroup != "" {
			v := infer.Verdict{Name: pt.Name, Note: "a KTable groupBy: not checked against the evidence (the audit judges each group's aggregate against the table's rows)"}
			c.Keys, c.Tables = append(c.Keys, v), append(c.Tables, v)
			continue
		}
		if pt.Spec != nil && len(pt.Spec.Cogroup) > 0 {
			v := infer.Verdict{Name: pt.Name, Note: "a cogroup: not checked against the evidence (the audit judges each key's aggregate against its members' inputs)"}
			c.Keys, c.Tables = append(c.Keys, v), append(c.Tables, v)
			continue
		}
		if pt.Unjudged != "" {
			// the spec and the topology already say it cannot be judged
			v := infer.Verdict{Name: pt.Name, Note: "not checked: " + pt.Unjudged}
			c.Keys, c.Tables = append(c.Keys, v), append(c.Tables, v)
			c.Unjudged = append(c.Unjudged, pt.Unjudged)
			continue
		}
		k := infer.CheckSelectKey(pt, ev)
		if pt.Spec != nil && pt.Spec.HasSteps() {
			k = infer.CheckSteps(pt, ev)
		}
		c.Keys = append(c.Keys, k)
		v := infer.CheckTable(pt, ev)
		c.Tables = append(c.Tables, v)
		for _, x := range []infer.Verdict{k, v} {
			if x.Unjudged != "" {
				c.Unjudged = append(c.Unjudged, x.Unjudged)
			}
		}
	}
	for _, pj := range s.Resolved.Joins {
		v := infer.CheckJoin(pj, s.Resolved, ev, infer.OutputOrder(ctx, ev.Topics[pj.Output], s.Decoder))
		c.Joins = append(c.Joins, v)
		if v.Unjudged != "" {
			c.Unjudged = append(c.Unjudged, v.Unjudged)
		}
	}
	return c, nil
}

// inferredJoinsOverUnjudged leaves unjudged, in a spec inferred from the
// evidence, each join over a table the inference did not settle or the
// spec check refuted: its guesses of that table (its key, its serdes)
// are not known to hold, and the join would be judged on them. A
// hand-written spec's join is judged on the changelogs whatever its
// tables' steps.
func (s *Setup) inferredJoinsOverUnjudged() {
	if s.Draft == nil {
		return
	}
	unjudged := map[string]string{}
	for _, t := range s.Pipeline.Tables {
		if t.Unjudged != "" {
			unjudged[t.Name] = t.Unjudged
		}
	}
	for i := range s.Pipeline.Joins {
		j := &s.Pipeline.Joins[i]
		if j.Unjudged != "" {
			continue
		}
		for _, name := range append([]string{j.Left}, j.Right...) {
			if why, ok := unjudged[name]; ok {
				j.Unjudged = fmt.Sprintf("join into %s is not judged: its table %s, as inferred, is not (%s)", j.Output, name, why)
				break
			}
		}
	}
}

// checkSpec runs the spec check before the audit judges: the tables and
// joins the evidence contradicts are not judged.
func (s *Setup) checkSpec(ctx context.Context, src audit.RecordSource, log func(string)) error {
	if s.Spec == nil || s.Resolved == nil {
		return nil
	}
	c, err := CheckSpec(ctx, s, src)
	if err != nil {
		return err
	}
	s.Warnings = append(s.Warnings, c.Notes...)
	for i, v := range c.Tables {
		if k := c.Keys[i]; k.Unjudged != "" {
			v = k
		}
		if v.Unjudged == "" || s.Pipeline.Tables[i].Unjudged != "" {
			continue
		}
		s.Pipeline.Tables[i].Unjudged = v.Unjudged
		if log != nil {
			log(v.Unjudged)
		}
	}
	for i, v := range c.Joins {
		if v.Unjudged == "" || s.Pipeline.Joins[i].Unjudged != "" {
			continue
		}
		s.Pipeline.Joins[i].Unjudged = v.Unjudged
		if log != nil {
			log(v.Unjudged)
		}
	}
	s.inferredJoinsOverUnjudged()
	s.unjudged = append(s.unjudged, c.Unjudged...)
	return nil
}
