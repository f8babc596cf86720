package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"

	"github.com/kaudit/kaudit/audit"
)

// Prom writes the report as Prometheus text exposition (format 0.0.4), for
// a node-exporter textfile collector or a push gateway. Every series has
// an app_id label. With a baseline, the verdict, the findings and the
// records vanished are those of the findings new since it, one population:
//
//	kaudit_records_vanished{stage,cause}  input records with a loss finding
//	kaudit_verdict{verdict}               1 for the verdict the exit code judges, 0 for the others
//	kaudit_pending_records                records not processed yet
//	kaudit_open_transactions              open transactions the evidence shows (a lower bound)
//	kaudit_findings{severity}             findings by severity
//	kaudit_missing_evidence               pieces of evidence missing (the run is incomplete when > 0)
//	kaudit_undecided_keys                 keys whose state proves lost inputs the evidence cannot name
//	kaudit_last_run_timestamp_seconds     when the audit ran (the run's time, not the evidence's)
//	kaudit_run_duration_seconds           how long the audit took (0 when not measured)
//	kaudit_run_success                    1: the audit ran to a report (kaudit diff writes 0 when it could not run)
func Prom(w io.Writer, r *audit.Report) error { return PromWith(w, r, Options{}) }

// PromWith is Prom with the run's duration. The verdict is the one the
// exit code judges (with a baseline: that of the findings new since).
func PromWith(w io.Writer, r *audit.Report, o Options) error {
	app := r.AppID
	var fams []*dto.MetricFamily
	family := func(name, help string, ms ...*dto.Metric) {
		fams = append(fams, &dto.MetricFamily{Name: proto.String(name), Help: proto.String(help), Type: dto.MetricType_GAUGE.Enum(), Metric: ms})
	}
	gauge := func(v float64, labels ...string) *dto.Metric {
		m := &dto.Metric{Gauge: &dto.Gauge{Value: proto.Float64(v)}, Label: []*dto.LabelPair{{Name: proto.String("app_id"), Value: proto.String(strings.ToValidUTF8(app, "\uFFFD"))}}}
		for i := 0; i+1 < len(labels); i += 2 {
			m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(labels[i]), Value: proto.String(strings.ToValidUTF8(labels[i+1], "\uFFFD"))})
		}
		return m
	}

	type sc struct {
		stage audit.Stage
		cause audit.Cause
	}
	// with a baseline, the series count what the verdict judges: the
	// findings new since it (not acknowledged), never the whole audit's
	// beside the verdict of the new ones
	counted := r.NewFindings()
	vanished := map[sc]int64{}
	for _, f := range counted {
		if f.Severity == audit.SeverityLoss {
			vanished[sc{f.Stage, f.Cause}] += max(f.Count, 1)
		}
	}
	keys := make([]sc, 0, len(vanished))
	for k := range vanished {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b sc) int { return cmp.Or(cmp.Compare(a.stage, b.stage), cmp.Compare(a.cause, b.cause)) })
	var ms []*dto.Metric
	for _, k := range keys {
		ms = append(ms, gauge(float64(vanished[k]), "stage", string(k.stage), "cause", string(k.cause)))
	}
	family("kaudit_records_vanished", "Input records that vanished, by the stage where they stopped and the cause (with --baseline: of the findings new since it).", ms...)

	v := r.ExitVerdict()
	if v == "" {
		v = verdictOf(r)
	}
	ms = nil
	for _, name := range []audit.Verdict{audit.VerdictClean, audit.VerdictLoss, audit.VerdictAnomaly, audit.VerdictIncomplete} {
		ms = append(ms, gauge(b2f(name == v), "verdict", string(name)))
	}
	family("kaudit_verdict", "The audit's verdict (with --baseline: of the findings new since the baseline, as the exit code): 1 for the current one, 0 for the others.", ms...)

	pending := float64(r.Summary.Pending)
	if r.Summary.PendingUnknown {
		pending = math.NaN() // the group's committed offsets are missing: no lag is known
	}
	family("kaudit_pending_records", "Input records at or above the committed offset: not processed yet (lag, not loss); NaN when the group's committed offsets are missing.", gauge(pending))
	family("kaudit_open_transactions", "Open transactions the evidence shows, a lower bound: hanging-transaction findings plus one for each partition of the cut whose LSO is below its high watermark without one.", gauge(float64(openTransactions(r))))

	sev := severityCounts(counted)
	ms = nil
	for _, s := range []audit.Severity{audit.SeverityLoss, audit.SeverityAnomaly, audit.SeverityRisk, audit.SeverityInfo} {
		ms = append(ms, gauge(float64(sev[s]), "severity", string(s)))
	}
	family("kaudit_findings", "Findings by severity (with --baseline: those new since it, as the verdict).", ms...)
	family("kaudit_missing_evidence", "Pieces of evidence the audit could not read; the verdict is at best incomplete when above 0.", gauge(float64(len(r.Summary.Missing))))
	family("kaudit_undecided_keys", "Keys whose final state proves lost inputs that the evidence cannot name one by one.", gauge(float64(r.Summary.Undecided)))

	// the run's own time, not the evidence's (a capture audited today
	// describes yesterday: its time is the report's generated_at)
	family("kaudit_last_run_timestamp_seconds", "When the audit ran, in seconds since the epoch (the run's time, not the time of the evidence it read).", gauge(float64(o.now().UnixMilli())/1000))
	family("kaudit_run_duration_seconds", "How long the audit took, in seconds (0 when not measured).", gauge(o.Duration.Seconds()))
	family("kaudit_run_success", "1 when the audit ran to a report; 0 when it could not run (an unreachable cluster, a snapshot that cannot be opened).", gauge(1))
	return encodeProm(w, fams)
}

// PromNotRun is the metrics of an audit that could not run: success 0
// and the time, so that a textfile collector does not keep serving the
// previous run's verdict as if current.
func PromNotRun(w io.Writer, appID string, at time.Time, took time.Duration) error {
	lbl := []*dto.LabelPair{{Name: proto.String("app_id"), Value: proto.String(strings.ToValidUTF8(appID, "\uFFFD"))}}
	g := func(name, help string, v float64) *dto.MetricFamily {
		return &dto.MetricFamily{Name: proto.String(name), Help: proto.String(help), Type: dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{Label: lbl, Gauge: &dto.Gauge{Value: proto.Float64(v)}}}}
	}
	return encodeProm(w, []*dto.MetricFamily{
		g("kaudit_last_run_timestamp_seconds", "When the audit ran, in seconds since the epoch.", float64(at.UnixMilli())/1000),
		g("kaudit_run_duration_seconds", "How long the attempt took, in seconds.", took.Seconds()),
		g("kaudit_run_success", "1 when the audit ran to a report; 0 when it could not run (an unreachable cluster, a snapshot that cannot be opened).", 0),
	})
}

func encodeProm(w io.Writer, fams []*dto.MetricFamily) error {
	var b strings.Builder
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range fams {
		if len(f.Metric) == 0 {
			continue // a family without series cannot be encoded: no loss, no kaudit_records_vanished
		}
		if err := enc.Encode(f); err != nil {
			return fmt.Errorf("encode metric %s: %w", f.GetName(), err)
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write metrics: %w", err)
	}
	return nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// openTransactions counts hanging-transaction findings (one transaction
// each), plus one for each
// partition of the cut whose LSO is below its high watermark (an open
// transaction holds it) and that no hanging-transaction finding names.
func openTransactions(r *audit.Report) int64 {
	var n int64
	named := map[audit.TopicPartition]bool{}
	for _, f := range r.Findings {
		if f.Cause == audit.CauseHangingTransaction {
			n++
			named[audit.TopicPartition{Topic: f.Topic, Partition: f.Partition}] = true
		}
	}
	seen := map[audit.TopicPartition]bool{}
	for _, c := range r.Cut {
		tp := audit.TopicPartition{Topic: c.Topic, Partition: c.Partition}
		if c.LSO >= 0 && c.LSO < c.HW && !named[tp] && !seen[tp] {
			seen[tp] = true
			n++
		}
	}
	return n
}
