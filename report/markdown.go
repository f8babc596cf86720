package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kaudit/kaudit/internal/mermaid"

	"github.com/kaudit/kaudit/audit"
)

// Caps keep the postmortem readable; CSV and JSON hold everything.
const (
	mdRowsPerCause  = 50   // finding rows per cause
	mdTimelineAll   = 120  // timelines up to this many minutes print whole
	mdTimelinePad   = 3    // quiet minutes shown around an incident window
	mdQuietRun      = 3    // all-zero minutes in a row beyond this collapse into one row
	mdCellMax       = 4000 // runes of a value or detail a table cell holds (a record may be huge)
	mdLineage       = 10   // sample lineages
	mdReplayCommand = 20   // replay command lines
	mdRanges        = 200  // rows of the replay and gone range tables
	mdJoinKeys      = 20   // keys listed for join findings
)

// funnelOrder is the order of Summary.Records keys in the funnel; other
// keys follow alphabetically.
var funnelOrder = []string{"read", "consumed", "repartitioned", "applied", "joined", "output"}

// inputHops are the funnel's hops that count inputs (one record each per
// source record): only between them is a change from hop to hop meaningful.
var inputHops = []string{"read", "consumed", "repartitioned", "applied"}

// Markdown writes the postmortem: verdict and summary, missing evidence,
// the cut, the topology, the funnel, the timeline, findings by cause with
// the known issues they match, sample lineage and what to do next.
func Markdown(w io.Writer, r *audit.Report, o Options) error {
	var b strings.Builder
	md := &mdWriter{b: &b}
	ms := timeline(r)
	windows, runs := incidentRuns(ms)
	replay, gone := ReplayRanges(r)

	md.f("# kaudit postmortem: %s\n\n", text(orDash(r.AppID)))
	if o.Verdict != "" {
		// --baseline: the exit code and the metrics judge what is new
		md.f("**Verdict on what is new since the baseline: %s.** The whole audit: %s (%s).\n\n", strings.ToUpper(string(o.Verdict)), strings.ToUpper(string(verdictOf(r))), text(verdictCounts(r)))
	} else {
		md.f("**Verdict: %s** (%s).\n\n", strings.ToUpper(string(verdictOf(r))), text(verdictCounts(r)))
	}
	writeGaps(md, r)
	md.f("Report generated %s", stamp(r.GeneratedAt))
	if r.Source != "" {
		md.f(" from %s", text(r.Source))
	}
	md.f("; rendered %s.", stamp(o.now()))
	if o.KafkaVersion != "" {
		md.f(" Broker Kafka version: %s.", text(o.KafkaVersion))
	} else {
		md.s(" Broker Kafka version not given (pass --kafka-version to check broker issues against it).")
	}
	if o.StreamsVersion != "" {
		md.f(" Kafka Streams version: %s.", text(o.StreamsVersion))
	} else {
		md.s(" Kafka Streams version not given (pass --streams-version to check client issues against it).")
	}
	md.s("\n\n## Summary\n\n")
	md.s(summaryParagraph(r, windows, replay, gone))
	md.s("\n\n")

	writeCut(md, r)
	writeTopology(md, r)
	writeFunnel(md, r)
	writeTimeline(md, r, ms, windows, runs, o)
	writeFindings(md, r, o)
	writeLineage(md, r)
	writeNext(md, r, replay, gone, o)
	writeProvenance(md, r, o)
	return write(w, []byte(strings.TrimRight(b.String(), "\n")+"\n"), "write markdown")
}

// writeProvenance says what made the report, so that a reader can tell
// which kaudit judged which evidence with which spec, and run it again.
func writeProvenance(md *mdWriter, r *audit.Report, o Options) {
	md.s("## Provenance\n\n")
	p := o.Provenance
	md.header("what", "value")
	md.row("kaudit", code(first(p.Version, "unknown")))
	if p.CommandLine != "" {
		md.row("command line (secrets redacted)", code(p.CommandLine))
	}
	switch {
	case p.SpecFile != "":
		md.row("spec", code(p.SpecFile)+" sha256 "+code(first(p.SpecSHA256, "unknown")))
	default:
		md.row("spec", "none: the checks that need no key only")
	}
	md.row("source", text(first(r.Source, "unknown")))
	md.row("report generated", stamp(r.GeneratedAt))
	md.row("rendered", stamp(o.now()))
	md.row("Kafka version (brokers)", text(first(o.KafkaVersion, "not given")))
	md.row("Kafka Streams version (the app's client)", text(first(o.StreamsVersion, "not given")))
	md.s("\n")
}

// issueVersion is the version a known issue is judged against: the
// brokers' for a broker bug, the Streams client's for a client bug; with
// what it is and the flag that gives it.
func (o Options) issueVersion(k KnownIssue) (v, which, flag string) {
	if k.Broker {
		return o.KafkaVersion, "broker", "--kafka-version"
	}
	return o.StreamsVersion, "Kafka Streams", "--streams-version"
}

// code is s as inline code in a table cell.
func code(s string) string {
	s = strings.ReplaceAll(flat(s), "`", "'")
	return "`" + strings.ReplaceAll(s, "|", "\\|") + "`"
}

func first(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

type mdWriter struct{ b *strings.Builder }

func (m *mdWriter) f(format string, args ...any) { fmt.Fprintf(m.b, format, args...) }
func (m *mdWriter) s(s string)                   { m.b.WriteString(s) }

// row writes one table row; cells must already be escaped.
func (m *mdWriter) row(cells ...string) {
	m.s("| " + strings.Join(cells, " | ") + " |\n")
}

// header writes a table header and its delimiter row; a column whose name
// starts with '>' is right-aligned.
func (m *mdWriter) header(cols ...string) {
	names := make([]string, len(cols))
	seps := make([]string, len(cols))
	for i, c := range cols {
		if strings.HasPrefix(c, ">") {
			names[i], seps[i] = c[1:], "---:"
		} else {
			names[i], seps[i] = c, "---"
		}
	}
	m.row(names...)
	m.row(seps...)
}

// text escapes s for Markdown prose and table cells: HTML-significant
// characters, pipes, and the characters that start emphasis or code.
func text(s string) string {
	return mdEscaper.Replace(s)
}

var mdEscaper = strings.NewReplacer(
	"&", "&amp;", "<", "&lt;", ">", "&gt;", "|", `\|`, "\\", `\\`,
	"*", `\*`, "_", `\_`, "`", "\\`", "[", `\[`, "]", `\]`,
	"\r\n", " ", "\n", " ", "\r", " ",
)

// cell is text clipped to n runes.
func cell(s string, n int) string { return text(clip(s, n)) }

func stamp(t time.Time) string {
	if t.IsZero() {
		return "at an unknown time"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func msStamp(ms int64) string {
	if ms < 0 {
		return ""
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000Z")
}

func num(n int64) string { return strconv.FormatInt(n, 10) }

// writeGaps shows missing evidence, skipped checks and notes near the top,
// so that an incomplete run never looks clean.
func writeGaps(md *mdWriter, r *audit.Report) {
	unreadable := 0
	for _, f := range r.Findings {
		if f.Cause == audit.CauseUnreadable {
			unreadable++
		}
	}
	s := r.Summary
	if len(s.Missing) == 0 && len(s.Skipped) == 0 && len(s.Notes) == 0 && unreadable == 0 {
		return
	}
	if len(s.Missing) > 0 || unreadable > 0 {
		md.s("> **Warning: this audit is incomplete.** Evidence was missing, so records may have vanished where kaudit could not look. Do not read the absence of a finding as proof that nothing was lost.\n")
	} else {
		md.s("> **Note:** read these before the findings.\n")
	}
	for _, m := range s.Missing {
		md.f("> - **Missing evidence:** %s\n", text(m))
	}
	if unreadable > 0 {
		md.f("> - **Unreadable:** %s (see `unreadable` below).\n", pluralVerb(int64(unreadable), "partition or file could not be read", "partitions or files could not be read"))
	}
	for _, k := range s.Skipped {
		md.f("> - **Skipped check:** %s\n", text(k))
	}
	for _, n := range s.Notes {
		md.f("> - **Note:** %s\n", text(n))
	}
	md.s("\n")
}

// summaryParagraph is the paragraph a manager reads.
func summaryParagraph(r *audit.Report, windows []Window, replay, gone []Range) string {
	app := text(orDash(r.AppID))
	lossBy := map[audit.Cause]int64{}
	other := map[audit.Cause]int64{}
	unreadable := 0
	for _, f := range r.Findings {
		switch {
		case f.Cause == audit.CauseUnreadable:
			unreadable++
		case f.Severity == audit.SeverityLoss:
			lossBy[f.Cause] += max(f.Count, 1)
		case f.Severity == audit.SeverityAnomaly:
			other[f.Cause]++
		}
	}
	var b strings.Builder
	vanished := r.Summary.Vanished
	if vanished == 0 {
		for _, n := range lossBy {
			vanished += n
		}
	}
	gaps := len(r.Summary.Missing) + unreadable
	incomplete := gaps > 0 || verdictOf(r) == audit.VerdictIncomplete
	switch {
	case vanished > 0:
		fmt.Fprintf(&b, "kaudit found that %s of %s vanished: %s.", plural(vanished, "input record"), app, causeList(lossBy))
		if len(other) > 0 {
			fmt.Fprintf(&b, " It also found %s.", anomalyList(other))
		}
	case len(other) > 0:
		fmt.Fprintf(&b, "kaudit found no vanished input record in %s, but %s.", app, anomalyList(other))
	case incomplete:
		fmt.Fprintf(&b, "kaudit found nothing lost in the evidence it could read for %s.", app)
	default:
		fmt.Fprintf(&b, "kaudit found no vanished records in %s: every input below the group's committed offsets is reflected in the stores and the output.", app)
	}
	if incomplete {
		fmt.Fprintf(&b, " **The audit is incomplete**: %s (listed above), so ", pluralVerb(int64(gaps), "piece of evidence was missing or unreadable", "pieces of evidence were missing or unreadable"))
		if vanished > 0 {
			b.WriteString("the true loss may be larger.")
		} else {
			b.WriteString("it does not show that nothing was lost.")
		}
	}
	if len(windows) > 0 {
		w := windows[0]
		fmt.Fprintf(&b, " The data places the incident between %s and %s UTC", w.Start.Format("2006-01-02 15:04"), w.End.Format("15:04"))
		if len(windows) > 1 {
			fmt.Fprintf(&b, " (and %s, see the timeline)", plural(int64(len(windows)-1), "later window"))
		}
		b.WriteString(".")
	}
	if vanished > 0 {
		fmt.Fprintf(&b, " %s of the vanished records can still be read from Kafka and replayed; %s offsets are gone from Kafka and must come from upstream.", num(total(replay)), num(total(gone)))
	}
	if r.Summary.Pending > 0 {
		fmt.Fprintf(&b, " %s records are still pending: the application has not processed them yet, which is lag, not loss.", num(r.Summary.Pending))
	}
	if n := r.Summary.ByCause[audit.CauseConfigRisk]; n > 0 {
		fmt.Fprintf(&b, " %s loss (see `config-risk`).", pluralVerb(n, "setting allows", "settings allow"))
	}
	return b.String()
}

// causeList is "12 records consumed but …, 3 records …" in cause order.
func causeList(by map[audit.Cause]int64) string {
	var parts []string
	for _, c := range audit.Causes {
		if n, ok := by[c]; ok {
			parts = append(parts, fmt.Sprintf("%s %s (`%s`)", num(n), describe(c), c))
		}
	}
	var extra []string
	for c := range by {
		if _, ok := causePhrase(c); !ok {
			extra = append(extra, fmt.Sprintf("%s %s", num(by[c]), text(string(c))))
		}
	}
	slices.Sort(extra)
	parts = append(parts, extra...)
	return strings.Join(parts, ", ")
}

// anomalyList is "3 anomalies that need attention (2 `duplicate`, 1 …)".
func anomalyList(by map[audit.Cause]int64) string {
	var n int64
	var parts []string
	keys := make([]audit.Finding, 0, len(by))
	for c := range by {
		keys = append(keys, audit.Finding{Cause: c})
	}
	for _, c := range causesIn(keys) {
		n += by[c]
		parts = append(parts, fmt.Sprintf("%d `%s`", by[c], text(string(c))))
	}
	return fmt.Sprintf("%s that need%s attention (%s)", pluralVerb(n, "anomaly", "anomalies"), map[bool]string{true: "s"}[n == 1], strings.Join(parts, ", "))
}

func describe(c audit.Cause) string {
	if s, ok := causePhrase(c); ok {
		return s
	}
	return text(string(c))
}

func total(rs []Range) int64 {
	var n int64
	for _, r := range rs {
		n += r.Count
	}
	return n
}

func writeCut(md *mdWriter, r *audit.Report) {
	md.s("## The cut\n\n")
	if len(r.Cut) == 0 {
		md.s("The report holds no cut: no committed offsets or partition offsets were read.\n\n")
		return
	}
	md.s("Each number was read with its own isolation: **committed** is the group's offset read with `require_stable` " +
		"(pending transactional commits are not mistaken for the cut), **LSO** is the end of a `read_committed` " +
		"fetch, **HW** the end of a `read_uncommitted` fetch. Under exactly-once these are one atomic cut.\n\n")
	md.header("topic", "role", ">partition", ">committed (require_stable)", ">log-start", ">LSO (read_committed)", ">HW (read_uncommitted)", "remarks")
	for _, c := range r.Cut {
		committed := num(c.Committed)
		if c.Committed < 0 {
			committed = "none"
		}
		md.row(text(c.Topic), text(orDash(c.Role)), strconv.Itoa(int(c.Partition)), committed,
			num(c.LogStart), num(c.LSO), num(c.HW), text(strings.Join(cutRemarks(c), "; ")))
	}
	md.s("\n")
}

// cutRemarks says what stands out in one partition's numbers.
func cutRemarks(c audit.PartitionCut) []string {
	var out []string
	consumed := c.Role == "source" || c.Role == "repartition"
	if c.Committed >= 0 && c.LogStart > c.Committed {
		out = append(out, fmt.Sprintf("log-start is %d above committed: offsets deleted before the app committed them", c.LogStart-c.Committed))
	}
	if c.Committed < 0 && consumed {
		out = append(out, "no committed offset for the group")
	}
	if c.LSO < c.HW {
		out = append(out, fmt.Sprintf("LSO %d below HW: an open transaction holds it", c.HW-c.LSO))
	}
	if consumed && c.Committed >= 0 && c.Committed < c.LSO {
		out = append(out, fmt.Sprintf("lag %d", c.LSO-c.Committed))
	}
	if c.Committed > c.HW {
		out = append(out, fmt.Sprintf("committed is %d above HW: the log was truncated under the group", c.Committed-c.HW))
	}
	return out
}

func writeTopology(md *mdWriter, r *audit.Report) {
	md.s("## Topology\n\n")
	if len(r.Edges) == 0 {
		md.s("The report holds no topology edges.\n\n")
		return
	}
	md.s("Record counts on each hop; hops where records vanished are red.\n\n")
	md.s(Mermaid(r.Edges))
	md.s("\n")
}

// Mermaid draws edges as a Mermaid flowchart block (fenced), one node per
// distinct name with ids n0, n1… in order of first appearance, each edge
// labelled "N records" plus ", M lost" where records vanished.
func Mermaid(edges []audit.Edge) string {
	ids := map[string]string{}
	var names []string
	id := func(name string) string {
		if v, ok := ids[name]; ok {
			return v
		}
		v := "n" + strconv.Itoa(len(ids))
		ids[name] = v
		names = append(names, name)
		return v
	}
	for _, e := range edges {
		id(e.From)
		id(e.To)
	}
	fc := mermaid.New()
	for _, n := range names {
		fc.Node(ids[n], mermaid.Box, n)
	}
	var lostLinks []string
	lostNodes := map[string]bool{}
	for i, e := range edges {
		label := num(e.Records) + " records"
		if e.Vanished > 0 {
			label += ", " + num(e.Vanished) + " lost"
			lostLinks = append(lostLinks, strconv.Itoa(i))
			lostNodes[ids[e.To]] = true
		}
		fc.Edge(ids[e.From], "-->", label, ids[e.To])
	}
	if len(lostLinks) > 0 {
		fc.LinkStyle(lostLinks, "stroke:#d62728,stroke-width:3px")
		var ln []string
		for _, n := range names {
			if lostNodes[ids[n]] {
				ln = append(ln, ids[n])
			}
		}
		fc.Class("lost", "fill:#fde2e2,stroke:#d62728", ln)
	}
	return "```mermaid\n" + fc.String() + "```\n"
}

func writeFunnel(md *mdWriter, r *audit.Report) {
	md.s("## Funnel by stage\n\n")
	recs := r.Summary.Records
	if len(recs) == 0 {
		md.s("The report holds no per-stage record counts.\n\n")
		return
	}
	keys := funnelKeys(recs)
	md.header("hop", ">records", ">change from previous hop")
	for i, k := range keys {
		change := ""
		if i > 0 && slices.Contains(inputHops, k) && slices.Contains(inputHops, keys[i-1]) {
			d := recs[k] - recs[keys[i-1]]
			change = strconv.FormatInt(d, 10)
			if d > 0 {
				change = "+" + change
			}
		}
		md.row(text(k), num(recs[k]), change)
	}
	md.s("\nA hop may legitimately hold fewer records than the one before (null keys, filters, a `latest` reducer folding updates); the findings below say which differences are losses.\n\n")
	if _, ok := recs["output"]; ok {
		md.s("`output` counts the records the app wrote, not inputs: record caching folds several updates of a key into one record, and a join writes one for an update of any of its tables, so it is not compared with the inputs applied (its difference is no loss; the join findings are).\n\n")
	}
}

func funnelKeys(recs map[string]int64) []string {
	var keys, extra []string
	for _, k := range funnelOrder {
		if _, ok := recs[k]; ok {
			keys = append(keys, k)
		}
	}
	for k := range recs {
		if !slices.Contains(funnelOrder, k) {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	return append(keys, extra...)
}

func writeTimeline(md *mdWriter, r *audit.Report, ms []audit.Minute, windows []Window, runs []run, o Options) {
	md.s("## Timeline\n\n")
	if len(ms) == 0 {
		md.s("The report holds no timeline.\n\n")
		return
	}
	if o.SVGPath != "" {
		md.f("![Timeline of %s](%s)\n\n", text(orDash(r.AppID)), linkTarget(o.SVGPath))
	}
	if len(windows) == 0 {
		md.s("No incident window stands out in the data: no aborted transactions, no gap in production, no vanished records.\n\n")
	} else {
		md.s("Incident windows found in the data (minutes with aborted transactions, a gap in production or vanished records, runs joined across up to two quiet minutes):\n\n")
		for _, w := range windows {
			md.f("- **%s – %s UTC** (%s): %s, %s with (almost) no production, %s vanished\n",
				w.Start.Format("2006-01-02 15:04"), w.End.Format("15:04"), plural(int64(w.End.Sub(w.Start)/time.Minute), "minute"),
				plural(int64(w.Aborted), "aborted transaction"), plural(int64(w.GapMinutes), "minute"), plural(int64(w.Vanished), "record"))
		}
		md.s("\n")
	}
	show := make([]bool, len(ms))
	marked := make([]bool, len(ms))
	for _, rn := range runs {
		for i := rn.first; i <= rn.last; i++ {
			marked[i] = true
		}
		for i := max(rn.first-mdTimelinePad, 0); i <= min(rn.last+mdTimelinePad, len(ms)-1); i++ {
			show[i] = true
		}
	}
	if len(ms) <= mdTimelineAll {
		for i := range show {
			show[i] = true
		}
	}
	// a stretch of minutes with nothing at all in them (a gap in
	// production inside an incident window too) is one row, not one row
	// each: only its first and last minute show
	for i := 0; i < len(ms); {
		j := i
		for j < len(ms) && quiet(ms[j]) {
			j++
		}
		if j-i > mdQuietRun {
			for k := i + 1; k < j-1; k++ {
				show[k] = false
			}
		}
		i = max(j, i+1)
	}
	md.header("minute (UTC)", ">produced", ">txns committed", ">txns aborted", ">vanished", "incident")
	var tot audit.Minute
	hidden, hiddenMarked, hiddenQuiet := 0, false, true
	flush := func() {
		switch {
		case hidden == 0:
		case hiddenQuiet:
			mark := ""
			if hiddenMarked {
				mark = "◀ incident"
			}
			md.row("… "+plural(int64(hidden), "quiet minute"), "0", "0", "0", "0", mark)
		default:
			md.row("… "+plural(int64(hidden), "minute")+" outside the incident windows", "", "", "", "", "")
		}
		hidden, hiddenMarked, hiddenQuiet = 0, false, true
	}
	for i, m := range ms {
		tot.Produced += m.Produced
		tot.Committed += m.Committed
		tot.Aborted += m.Aborted
		tot.Vanished += m.Vanished
		if !show[i] {
			hidden++
			hiddenMarked = hiddenMarked || marked[i]
			hiddenQuiet = hiddenQuiet && quiet(m)
			continue
		}
		flush()
		mark := ""
		if marked[i] {
			mark = "◀ incident"
		}
		md.row(time.UnixMilli(m.Start).UTC().Format("2006-01-02 15:04"), num(m.Produced), num(m.Committed), num(m.Aborted), num(m.Vanished), mark)
	}
	flush()
	md.row("**total**", num(tot.Produced), num(tot.Committed), num(tot.Aborted), num(tot.Vanished), "")
	md.s("\n")
}

// quiet is a minute in which nothing was produced, committed, aborted or
// lost.
func quiet(m audit.Minute) bool {
	return m.Produced == 0 && m.Committed == 0 && m.Aborted == 0 && m.Vanished == 0
}

// linkTarget makes a path usable as a Markdown link target.
func linkTarget(p string) string {
	if strings.ContainsAny(p, " ()<>") {
		return "<" + strings.NewReplacer("<", "%3C", ">", "%3E").Replace(p) + ">"
	}
	return p
}

// writeSignatures lists the evidence a known bug leaves and the findings
// that rest on it.
func writeSignatures(md *mdWriter, r *audit.Report) {
	if len(r.Signatures) == 0 {
		return
	}
	md.s("## Known bugs the evidence points to\n\n")
	md.header("issue", "evidence", "offsets", "findings", "fixed in", "keys")
	for _, sg := range r.Signatures {
		issue := sg.Issue
		if sg.Candidate {
			issue += " (consistent with, not proven)"
		}
		md.row(issue, fmt.Sprintf("%s/%d", sg.Topic, sg.Partition), fmt.Sprintf("%d-%d", sg.From, sg.To),
			fmt.Sprint(sg.Findings), strings.Join(sg.FixedIn, ", "), strings.Join(sg.Keys, ", "))
	}
	md.s("\n")
	for _, sg := range r.Signatures {
		md.f("- %s\n", text(sg.Detail))
	}
	md.s("\n")
}

func writeFindings(md *mdWriter, r *audit.Report, o Options) {
	writeSignatures(md, r)
	md.s("## Findings by cause\n\n")
	if len(r.Findings) == 0 {
		md.s("No findings.\n\n")
		return
	}
	by := map[audit.Cause][]int{} // indices, not copies: reports can hold many findings
	for i, f := range r.Findings {
		by[f.Cause] = append(by[f.Cause], i)
	}
	for _, c := range causesIn(r.Findings) {
		idx := by[c]
		var recs int64
		for _, i := range idx {
			recs += max(r.Findings[i].Count, 1)
		}
		fs := r.Findings[idx[0] : idx[0]+1] // the first, for its severity
		md.f("### `%s`: %s, %s", c, fs[0].Severity, plural(int64(len(idx)), "finding"))
		if sev := fs[0].Severity; sev == audit.SeverityLoss || sev == audit.SeverityInfo {
			md.f(", %s", plural(recs, "record"))
		}
		md.s("\n\n")
		md.s(Explain(c))
		md.s("\n\n")
		if ks := issuesFor(c); len(ks) > 0 {
			md.s("Known Kafka issues whose signature this matches:\n\n")
			for _, k := range ks {
				md.f("- **%s**: %s. %s %s.", k.ID, k.Title, k.Mechanism, capitalize(k.Versions()))
				v, which, flag := o.issueVersion(k)
				switch st := k.Status(v); {
				case v == "":
					md.f(" Your %s version is unknown (pass %s to check it).", which, flag)
				case st == StatusUnknown:
					md.f(" %s version %s could not be parsed.", capitalize(which), text(v))
				default:
					md.f(" **%s: %s %s.**", capitalize(st.String()), which, text(v))
				}
				if k.Caveat != "" {
					md.f(" (Versions: %s.)", k.Caveat)
				}
				md.s("\n")
			}
			md.s("\n")
		}
		md.header("stage", "topic", ">partition", ">offset", ">count", "key", "timestamp", "producer", "expected", "actual", "detail")
		for _, i := range idx[:min(len(idx), mdRowsPerCause)] {
			f := r.Findings[i]
			off := num(f.Offset)
			if f.Offset < 0 {
				off = "absent"
			}
			md.row(text(string(f.Stage)), text(f.Topic), strconv.Itoa(int(f.Partition)), off, num(f.Count),
				cell(f.Key, 40), msStamp(f.Timestamp), text(producer(f)), cell(f.Expected, mdCellMax), cell(f.Actual, mdCellMax), cell(f.Detail, mdCellMax))
		}
		if n := len(idx) - mdRowsPerCause; n > 0 {
			md.f("\n… and %d more `%s` findings (all of them are in `--format csv` and `--format json`).\n", n, c)
		}
		md.s("\n")
	}
}

func producer(f audit.Finding) string {
	if f.ProducerID < 0 && f.TransactionalID == "" {
		return ""
	}
	s := ""
	if f.ProducerID >= 0 {
		s = fmt.Sprintf("pid %d epoch %d", f.ProducerID, f.ProducerEpoch)
	}
	if f.TransactionalID != "" {
		s = strings.TrimSpace(s + " txn " + f.TransactionalID)
	}
	return s
}

// plural is "1 finding" or "3 findings".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return num(n) + " " + noun + "s"
}

func pluralVerb(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return num(n) + " " + many
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func writeLineage(md *mdWriter, r *audit.Report) {
	if len(r.Lineage) == 0 {
		return
	}
	md.s("## Lineage of sample vanished records\n\n")
	md.s("Each sample follows one vanished input hop by hop: where the pipeline should hold it and what is there instead.\n\n")
	for i, l := range r.Lineage[:min(len(r.Lineage), mdLineage)] {
		if l.Finding < 0 || l.Finding >= len(r.Findings) {
			md.f("### %d. finding %d (not in this report)\n\n", i+1, l.Finding)
		} else {
			f := r.Findings[l.Finding]
			md.f("### %d. `%s` %s", i+1, f.Cause, text(where(f.Topic, f.Partition)))
			if f.Offset >= 0 {
				md.f("@%d", f.Offset)
			}
			if f.Key != "" {
				md.f(", key %s", cell(f.Key, 60))
			}
			md.s("\n\n")
		}
		md.header("hop", "stage", "where", ">offset", "expected", "actual", "note")
		for j, h := range l.Hops {
			off := num(h.Offset)
			if h.Offset < 0 {
				off = "none"
			}
			md.row(strconv.Itoa(j+1), text(string(h.Stage)), text(where(h.Topic, h.Partition)), off,
				cell(h.Expected, mdCellMax), cell(h.Actual, mdCellMax), cell(h.Note, mdCellMax))
		}
		md.s("\n")
	}
	if n := len(r.Lineage) - mdLineage; n > 0 {
		md.f("… and %s more in `--format json`.\n\n", plural(int64(n), "sample"))
	}
}

// where is "topic/partition", or the topic alone where no partition is
// known (a store whose changelog partition the evidence does not name).
func where(topic string, partition int32) string {
	if partition < 0 {
		return topic
	}
	return fmt.Sprintf("%s/%d", topic, partition)
}

func writeNext(md *mdWriter, r *audit.Report, replay, gone []Range, o Options) {
	md.s("## What to do next\n\n")
	boot := o.ReplayBootstrap
	if boot == "" {
		boot = "BOOTSTRAP"
	}
	boot = shellQuote(boot)
	steps := 0
	if len(r.Summary.Missing) > 0 || verdictOf(r) == audit.VerdictIncomplete {
		steps++
		md.s("### Complete the evidence first\n\nThe audit could not read everything (see the warning at the top). Fix access to the missing evidence and run kaudit again before acting on the numbers below: they are a lower bound.\n\n")
	}
	if len(replay) > 0 {
		steps++
		md.s("### Replay the vanished inputs that Kafka still holds\n\n")
		md.header("topic", ">partition", ">from offset", ">to offset", ">records")
		writeRanges(md, replay, nil)
		md.s("\nCopy each record to files (its key, and its value byte for byte: binary Avro survives), check them, then produce them back to the same partition")
		if len(o.ReplayFlags) > 0 {
			md.s(" (the client's security settings are the `-X` flags; set the variables they name, kaudit never prints a secret)")
		}
		md.s(":\n\n")
		for _, n := range o.ReplayNotes {
			md.f("- %s\n", text(n))
		}
		if len(o.ReplayNotes) > 0 {
			md.s("\n")
		}
		md.s("```sh\n")
		for _, rg := range replay[:min(len(replay), mdReplayCommand)] {
			md.s(ReplayCommands(rg, boot, o.ReplayFlags))
		}
		md.s("```\n\n")
		if n := len(replay) - mdReplayCommand; n > 0 {
			md.f("… and %d more ranges, built the same way.\n\n", n)
		}
		md.s("Be aware of what a replay does. It appends copies at new offsets of the source topic, and the application processes them as new input: " +
			"a `latest` reducer converges, but `count` and `sum` reducers, and every other consumer of the topic, count again whatever had in fact been applied. " +
			"The copies get new timestamps (windowed operations see them late) and lose their headers. A key travels as a command-line argument: " +
			"one with a NUL byte or a trailing newline (a Confluent Avro key starts with a NUL) needs a byte-exact copier. Take a `kaudit capture` before replaying so that this evidence survives.\n\n")
	}
	if len(gone) > 0 {
		steps++
		md.s("### Recover what Kafka no longer holds\n\nThese offsets are gone from Kafka (deleted by retention, purged, or truncated). " +
			"Records of an internal topic (repartition, changelog) can be derived again from the source records they came from, when those are still readable " +
			"(each finding's detail names the candidates); records of a source topic must come from the system that produced them.\n\n")
		role := map[string]string{}
		for _, c := range r.Cut {
			role[c.Topic] = c.Role
		}
		md.header("topic", ">partition", ">from offset", ">to offset", ">offsets", "recover from")
		writeRanges(md, gone, func(rg Range) string {
			switch role[rg.Topic] {
			case "repartition", "changelog":
				return "the source records (see the findings' detail)"
			case "source":
				return "the producing system"
			}
			return "the producing system, or the source records if the topic is internal"
		})
		md.s("\n")
	}
	var joins, hanging, risks, dups, checkpoints, undecodable []audit.Finding
	for _, f := range r.Findings {
		switch f.Cause {
		case audit.CauseJoinMissing, audit.CauseJoinStale:
			joins = append(joins, f)
		case audit.CauseHangingTransaction:
			hanging = append(hanging, f)
		case audit.CauseConfigRisk:
			risks = append(risks, f)
		case audit.CauseDuplicate:
			dups = append(dups, f)
		case audit.CauseCheckpointAhead:
			checkpoints = append(checkpoints, f)
		case audit.CauseUndecodable:
			undecodable = append(undecodable, f)
		}
	}
	if len(joins) > 0 {
		steps++
		md.f("### Re-emit %s\n\nThe join re-emits a key whenever one of its tables updates, so replaying the inputs above rebuilds these outputs. Where the tables are right and only the output is wrong, re-emit the keys (an update of the left table's record rebuilds the output). Keys: ", plural(int64(len(joins)), "join output"))
		var keys []string
		for _, f := range joins[:min(len(joins), mdJoinKeys)] {
			keys = append(keys, cell(orDash(f.Key), 40))
		}
		md.s(strings.Join(keys, ", "))
		if n := len(joins) - mdJoinKeys; n > 0 {
			md.f(" and %d more", n)
		}
		md.s(".\n\n")
	}
	if len(hanging) > 0 {
		steps++
		md.s("### Abort the hanging transactions\n\nA hanging transaction holds the LSO: the application and every read_committed consumer stall behind it. Confirm with `kafka-transactions.sh find-hanging`, then abort it (this writes an ABORT marker; kaudit itself never does):\n\n```sh\n")
		for _, f := range hanging {
			md.f("kafka-transactions.sh --bootstrap-server %s abort --topic %s --partition %d --start-offset %d\n", boot, shellQuote(f.Topic), f.Partition, f.Offset)
		}
		md.s("```\n\n")
	}
	if len(checkpoints) > 0 {
		steps++
		md.f("### Do not restart on the bad checkpoints\n\n%s ahead of what the changelog holds. "+
			"Before the next start of the affected instances, remove the task directories concerned (or the whole state directory) "+
			"so that Streams restores the stores from their changelogs instead of trusting the checkpoint.\n\n",
			pluralVerb(int64(len(checkpoints)), "checkpoint is", "checkpoints are"))
	}
	if len(dups) > 0 {
		steps++
		md.f("### Correct what was counted twice\n\n%s applied twice in committed data. "+
			"A committed write cannot be undone: a `count` or `sum` store, and whatever consumed the output, is over by these inputs until corrected by hand "+
			"(for example with a compensating input). A `latest` store is unaffected.\n\n",
			pluralVerb(int64(len(dups)), "input was", "inputs were"))
	}
	if len(undecodable) > 0 {
		steps++
		md.f("### Give kaudit the schemas\n\n%s could not be decoded, so their content was not compared. "+
			"Pass the schemas (`--schemas DIR` or `--schema-registry-url`) or the right `--key-serde`/`--value-serde` and run again.\n\n",
			plural(int64(len(undecodable)), "record"))
	}
	if r.Summary.Pending > 0 {
		steps++
		md.f("### Let the application catch up\n\n%s pending: they are above the committed offsets and will be processed when the application runs. They are not lost.\n\n", pluralVerb(r.Summary.Pending, "record is", "records are"))
	}
	if o.KafkaVersion != "" || o.StreamsVersion != "" {
		var up []string
		for _, c := range causesIn(r.Findings) {
			for _, k := range issuesFor(c) {
				v, which, _ := o.issueVersion(k)
				if v != "" && k.Status(v) == StatusAffected {
					s := fmt.Sprintf("%s in your %s %s (%s)", k.ID, which, v, k.Versions())
					if !slices.Contains(up, s) {
						up = append(up, s)
					}
				}
			}
		}
		if len(up) > 0 {
			steps++
			md.f("### Upgrade\n\nYour versions have known issues whose signature matches these findings: %s.\n\n", text(strings.Join(up, "; ")))
		}
	}
	if len(risks) > 0 {
		steps++
		md.s("### Fix the risky settings\n\n")
		for _, f := range risks {
			where := f.Topic
			if where == "" {
				where = "cluster"
			}
			md.f("- %s: %s\n", text(where), cell(f.Detail, 200))
		}
		md.s("\n")
	}
	if steps == 0 {
		md.s("Nothing to replay or repair.\n")
	}
}

// writeRanges writes range rows, at most mdRanges of them, with an extra
// column from extra when it is not nil.
// ReplayCommands is the shell that copies the records of rg to files,
// one key file and one value file per offset (kcat's -f '%s' writes the
// value byte for byte), and produces them back to the same partition,
// each value file as one message. boot is shell-quoted already; flags are
// kcat -X flags.
func ReplayCommands(rg Range, boot string, flags []string) string {
	x := ""
	if len(flags) > 0 {
		x = " " + strings.Join(flags, " ")
	}
	t, base := shellQuote(rg.Topic), shellQuote(fmt.Sprintf("replay-%s-%d-", rg.Topic, rg.Partition))
	var b strings.Builder
	fmt.Fprintf(&b, "for o in $(seq %d %d); do\n", rg.From, rg.To())
	fmt.Fprintf(&b, "  kcat -C -q -b %s%s -t %s -p %d -o \"$o\" -c 1 -e -f '%%k' > %s\"$o.key\"\n", boot, x, t, rg.Partition, base)
	fmt.Fprintf(&b, "  kcat -C -q -b %s%s -t %s -p %d -o \"$o\" -c 1 -e -f '%%s' > %s\"$o.value\"\n", boot, x, t, rg.Partition, base)
	b.WriteString("done\n")
	fmt.Fprintf(&b, "for o in $(seq %d %d); do\n", rg.From, rg.To())
	fmt.Fprintf(&b, "  kcat -P -q -b %s%s -t %s -p %d -k \"$(cat %s\"$o.key\")\" %s\"$o.value\"\n", boot, x, t, rg.Partition, base, base)
	b.WriteString("done\n")
	return b.String()
}

func writeRanges(md *mdWriter, rs []Range, extra func(Range) string) {
	for _, rg := range rs[:min(len(rs), mdRanges)] {
		cells := []string{text(rg.Topic), strconv.Itoa(int(rg.Partition)), num(rg.From), num(rg.To()), num(rg.Count)}
		if extra != nil {
			cells = append(cells, text(extra(rg)))
		}
		md.row(cells...)
	}
	if n := len(rs) - mdRanges; n > 0 {
		md.f("\n… and %d more ranges (%d offsets); every offset is in the findings (`--format csv`).\n", n, total(rs[mdRanges:]))
	}
}

// shellQuote quotes s for a POSIX shell when it holds anything beyond
// [A-Za-z0-9._:,/=-].
func shellQuote(s string) string {
	safe := s != ""
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._:,/=-", c)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
