package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/kaudit/kaudit/audit"
)

// jsonSchema is the version of the JSON document: 2 prints key, expected
// and actual as JSON values and unknown numbers as null. A document without
// it is read as version 1 (those fields as strings, -1 for unknown).
const jsonSchema = 2

// value is a key or value's canonical JSON text as a JSON value: valid
// JSON as itself (null is a null value: a tombstone, a null key), any
// other text (a marker such as "absent", or "b64:…" for bytes that did not
// decode) as a string. Fields of this type are omitted when no value is
// stated ("").
type value string

func (v value) MarshalJSON() ([]byte, error) {
	if json.Valid([]byte(v)) {
		var b bytes.Buffer
		if err := json.Compact(&b, []byte(v)); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	}
	return marshalString(string(v))
}

// markers are the texts kaudit prints where there is no value to print;
// reading back, a JSON string that is one of them is the marker, not a
// string value.
func isMarker(s string) bool {
	return markers[s] || strings.HasPrefix(s, "b64:") || strings.HasPrefix(s, "< ")
}

// markers are the fixed texts of audit/reconcile's findings and lineage
// hops where a hop holds no value.
var markers = map[string]bool{
	"absent": true, "a committed copy": true, "committed copy": true, "aborted copy only": true, "no copy": true,
}

func (v *value) UnmarshalJSON(b []byte) error {
	var s string
	if b[0] == '"' && json.Unmarshal(b, &s) == nil && isMarker(s) {
		*v = value(s)
		return nil
	}
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		return err
	}
	*v = value(c.String())
	return nil
}

// marshalString encodes s as a JSON string without HTML escaping, as the
// canonical text does.
func marshalString(s string) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(s); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// opt is a number where -1 means unknown: it prints as null.
type opt[T ~int16 | ~int32 | ~int64] struct{ v T }

func (o opt[T]) MarshalJSON() ([]byte, error) {
	if o.v == -1 {
		return []byte("null"), nil
	}
	return json.Marshal(o.v)
}

func (o *opt[T]) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		o.v = -1
		return nil
	}
	return json.Unmarshal(b, &o.v)
}

type wireFinding struct {
	Stage           audit.Stage    `json:"stage"`
	Cause           audit.Cause    `json:"cause"`
	Severity        audit.Severity `json:"severity"`
	Topic           string         `json:"topic"`
	Partition       opt[int32]     `json:"partition"`
	Offset          opt[int64]     `json:"offset"`
	Count           int64          `json:"count"`
	Key             value          `json:"key,omitempty"`
	Timestamp       opt[int64]     `json:"timestamp"`
	TransactionalID string         `json:"transactional_id"`
	ProducerID      opt[int64]     `json:"producer_id"`
	ProducerEpoch   opt[int16]     `json:"producer_epoch"`
	Expected        value          `json:"expected,omitempty"`
	Actual          value          `json:"actual,omitempty"`
	Detail          string         `json:"detail"`
	Candidates      string         `json:"candidates,omitempty"`
}

type wireCut struct {
	Topic     string     `json:"topic"`
	Partition int32      `json:"partition"`
	Role      string     `json:"role"`
	Committed opt[int64] `json:"committed"`
	LogStart  opt[int64] `json:"log_start"`
	LSO       opt[int64] `json:"lso"`
	HW        opt[int64] `json:"hw"`
}

type wireHop struct {
	Stage     audit.Stage `json:"stage"`
	Topic     string      `json:"topic"`
	Partition opt[int32]  `json:"partition"`
	Offset    opt[int64]  `json:"offset"`
	Expected  value       `json:"expected,omitempty"`
	Actual    value       `json:"actual,omitempty"`
	Note      string      `json:"note,omitempty"`
}

type wireLineage struct {
	Finding int       `json:"finding"`
	Hops    []wireHop `json:"hops"`
}

type wireSignature struct {
	Issue     string   `json:"issue"`
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	From      int64    `json:"from"`
	To        int64    `json:"to"`
	Findings  int64    `json:"findings"`
	Keys      []value  `json:"keys,omitempty"`
	Detail    string   `json:"detail"`
	FixedIn   []string `json:"fixed_in,omitempty"`
	Candidate bool     `json:"candidate,omitempty"`
}

type wireReport struct {
	Schema      int             `json:"schema"`
	AppID       string          `json:"app_id"`
	GeneratedAt time.Time       `json:"generated_at"`
	Cut         []wireCut       `json:"cut"`
	Summary     audit.Summary   `json:"summary"`
	Findings    []wireFinding   `json:"findings"`
	Edges       []audit.Edge    `json:"edges,omitempty"`
	Timeline    []audit.Minute  `json:"timeline,omitempty"`
	Lineage     []wireLineage   `json:"lineage,omitempty"`
	Source      string          `json:"source,omitempty"`
	Signatures  []wireSignature `json:"signatures,omitempty"`
	Shard       *audit.Shard    `json:"shard,omitempty"`
	Baseline    *audit.Baseline `json:"baseline,omitempty"`
}

func toWireFinding(f audit.Finding) wireFinding {
	return wireFinding{
		Stage: f.Stage, Cause: f.Cause, Severity: f.Severity, Topic: f.Topic,
		Partition: opt[int32]{f.Partition}, Offset: opt[int64]{f.Offset}, Count: f.Count,
		Key: value(f.Key), Timestamp: opt[int64]{f.Timestamp}, TransactionalID: f.TransactionalID,
		ProducerID: opt[int64]{f.ProducerID}, ProducerEpoch: opt[int16]{f.ProducerEpoch},
		Expected: value(f.Expected), Actual: value(f.Actual), Detail: f.Detail, Candidates: f.Candidates,
	}
}

func (w wireFinding) finding() audit.Finding {
	return audit.Finding{
		Stage: w.Stage, Cause: w.Cause, Severity: w.Severity, Topic: w.Topic,
		Partition: w.Partition.v, Offset: w.Offset.v, Count: w.Count,
		Key: string(w.Key), Timestamp: w.Timestamp.v, TransactionalID: w.TransactionalID,
		ProducerID: w.ProducerID.v, ProducerEpoch: w.ProducerEpoch.v,
		Expected: string(w.Expected), Actual: string(w.Actual), Detail: w.Detail, Candidates: w.Candidates,
	}
}

func wireFindings(fs []audit.Finding) []wireFinding {
	out := make([]wireFinding, len(fs))
	for i, f := range fs {
		out[i] = toWireFinding(f)
	}
	return out
}

func toWire(r *audit.Report) *wireReport {
	w := &wireReport{
		Schema: jsonSchema, AppID: r.AppID, GeneratedAt: r.GeneratedAt, Summary: r.Summary,
		Cut: make([]wireCut, len(r.Cut)), Findings: wireFindings(r.Findings),
		Edges: r.Edges, Timeline: r.Timeline, Source: r.Source, Shard: r.Shard, Baseline: r.Baseline,
	}
	for i, c := range r.Cut {
		w.Cut[i] = wireCut{c.Topic, c.Partition, c.Role, opt[int64]{c.Committed}, opt[int64]{c.LogStart}, opt[int64]{c.LSO}, opt[int64]{c.HW}}
	}
	for _, l := range r.Lineage {
		wl := wireLineage{Finding: l.Finding, Hops: make([]wireHop, len(l.Hops))}
		for j, h := range l.Hops {
			wl.Hops[j] = wireHop{h.Stage, h.Topic, opt[int32]{h.Partition}, opt[int64]{h.Offset}, value(h.Expected), value(h.Actual), h.Note}
		}
		w.Lineage = append(w.Lineage, wl)
	}
	for _, s := range r.Signatures {
		ws := wireSignature{s.Issue, s.Topic, s.Partition, s.From, s.To, s.Findings, nil, s.Detail, s.FixedIn, s.Candidate}
		for _, k := range s.Keys {
			ws.Keys = append(ws.Keys, value(k))
		}
		w.Signatures = append(w.Signatures, ws)
	}
	return w
}

func (w *wireReport) report() *audit.Report {
	r := &audit.Report{
		AppID: w.AppID, GeneratedAt: w.GeneratedAt, Summary: w.Summary,
		Edges: w.Edges, Timeline: w.Timeline, Source: w.Source, Shard: w.Shard, Baseline: w.Baseline,
	}
	for _, c := range w.Cut {
		r.Cut = append(r.Cut, audit.PartitionCut{Topic: c.Topic, Partition: c.Partition, Role: c.Role,
			Committed: c.Committed.v, LogStart: c.LogStart.v, LSO: c.LSO.v, HW: c.HW.v})
	}
	for _, f := range w.Findings {
		r.Findings = append(r.Findings, f.finding())
	}
	for _, l := range w.Lineage {
		al := audit.Lineage{Finding: l.Finding}
		for _, h := range l.Hops {
			al.Hops = append(al.Hops, audit.Hop{Stage: h.Stage, Topic: h.Topic, Partition: h.Partition.v, Offset: h.Offset.v,
				Expected: string(h.Expected), Actual: string(h.Actual), Note: h.Note})
		}
		r.Lineage = append(r.Lineage, al)
	}
	for _, s := range w.Signatures {
		as := audit.Signature{Issue: s.Issue, Topic: s.Topic, Partition: s.Partition, From: s.From, To: s.To,
			Findings: s.Findings, Detail: s.Detail, FixedIn: s.FixedIn, Candidate: s.Candidate}
		for _, k := range s.Keys {
			as.Keys = append(as.Keys, string(k))
		}
		r.Signatures = append(r.Signatures, as)
	}
	return r
}

// encodeIndented is json.MarshalIndent without HTML escaping: values print
// as their canonical text does ("<" stays "<").
func encodeIndented(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.SetIndent("", "  ")
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
