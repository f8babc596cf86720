package report

import (
	"fmt"
	"io"
	"maps"
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
	mdReplayCommand = 100  // ranges the replay commands copy (one loop per partition)
	mdRanges        = 200  // rows of the replay and gone range tables
	mdJoinKeys      = 20   // keys listed for join findings
)

// funnelOrder is the order of Summary.Records keys in the funnel; other
// keys follow alphabetically.
var funnelOrder = []string{"read", "consumed", "judged", "repartitioned", "applied", "joined", "output"}

// Markdown writes the postmortem. Its first screen holds the verdict with
// the numbers that matter, the warnings of an incomplete run, the losses
// and anomalies, and what to do next; then the details: how to do it,
// the findings by cause, the known Kafka issues they match, the pipeline,
// the funnel, the timeline, sample lineage, notes, the cut, a glossary
// and the provenance. Every number comes from the report's Tally.
func Markdown(w io.Writer, r *audit.Report, o Options) error {
	var b strings.Builder
	md := &mdWriter{b: &b}
	t := TallyOf(r)
	ms := timeline(r)
	windows, runs := incidentRuns(ms)

	md.f("# kaudit postmortem: %s\n\n", text(orDash(r.AppID)))
	headline(md, r, t)
	writeWarnings(md, r, t)
	writeUrgent(md, r)
	writeNextSteps(md, r, t, o)

	writeHowTo(md, r, t, o)
	writeFindings(md, r, o)
	writeKnownIssues(md, r, o)
	writeTopology(md, r, t)
	writeFunnel(md, r, t)
	writeTimeline(md, r, t, ms, windows, runs, o)
	writeLineage(md, r)
	writeNotes(md, r)
	writeCut(md, r)
	writeGlossary(md)
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
	in := r.Inferred
	switch {
	case p.SpecFile != "":
		md.row("spec", code(p.SpecFile)+" sha256 "+code(first(p.SpecSHA256, "unknown")))
	case in != nil:
		saved := "--save-spec FILE writes it with each guess's evidence"
		if p.SavedSpec != "" {
			saved = "saved with each guess's evidence to " + p.SavedSpec + " (--save-spec)"
		}
		md.row("spec", "inferred from the evidence (no --spec), sha256 "+code(in.SHA256)+text(fmt.Sprintf(": %d tables, %d joins, %d guesses, %d left unsettled, on the topology of %s; the JSON report holds it whole (inferred_spec); %s", len(in.Tables), len(in.Joins), in.Guesses, in.Unsettled, in.Topology, saved)))
	default:
		md.row("spec", "none: the checks that need no key only")
	}
	md.row("source", text(first(r.Source, "unknown")))
	md.row("report generated", stamp(r.GeneratedAt))
	md.row("rendered", stamp(o.now()))
	md.row("Kafka version (brokers)", text(first(o.KafkaVersion, "not given")))
	md.row("Kafka Streams version (the app's client)", text(first(o.StreamsVersion, "not given")))
	md.s("\n")
	if in != nil && p.SpecFile == "" {
		writeInferred(md, in)
	}
}

// writeInferred summarises the spec the audit inferred: each table and
// join with what the evidence settled and whether it was judged.
func writeInferred(md *mdWriter, in *audit.Inferred) {
	md.s("### The inferred spec\n\n")
	if len(in.Tables) > 0 {
		md.header("table", "source", "steps", "select_key", "reduce", "judged")
		for _, t := range in.Tables {
			judged := "yes"
			switch {
			case t.Unjudged != "":
				judged = "no: " + t.Unjudged
			case t.Unsure != "":
				judged = "yes, but not its inputs without a copy (" + t.Unsure + ": its predicate is not known)"
			}
			md.row(text(first(t.Name, "-")), text(first(t.Source, "-")), text(first(strings.Join(t.Steps, "; "), "-")), text(first(t.SelectKey, "-")),
				text(first(t.Reduce, "-")), cell(judged, 300))
		}
		md.s("\n")
	}
	if len(in.Joins) > 0 {
		md.header("join into", "left", "right", "type", "judged")
		for _, j := range in.Joins {
			md.row(text(j.Output), text(j.Left), text(strings.Join(j.Right, ", ")), text(first(j.Type, "-")), cell(first(prefixed("no: ", j.Unjudged), "yes"), 300))
		}
		md.s("\n")
	}
}

// prefixed is p+s, "" for an empty s.
func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
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
	md.s("Each number was read with its own isolation: **committed offset** is the group's offset (where the app resumes, not a count of records) read with `require_stable` " +
		"(pending transactional commits are not mistaken for the cut), **LSO** is the end of a `read_committed` " +
		"fetch, **HW** the end of a `read_uncommitted` fetch, and **lag** is HW − committed offset, as `kafka-consumer-groups.sh` counts it. Under exactly-once these are one atomic cut.\n\n")
	md.header("topic", "role", ">partition", ">committed offset (require_stable)", ">log-start", ">LSO (read_committed)", ">HW (read_uncommitted)", ">lag (HW − committed)", "remarks")
	for _, c := range r.Cut {
		committed, lag := num(c.Committed), ""
		if c.Committed < 0 {
			committed = "none"
		}
		if c.Committed >= 0 && (c.Role == "source" || c.Role == "repartition") {
			lag = num(max(c.HW-c.Committed, 0))
		}
		md.row(text(c.Topic), text(orDash(c.Role)), strconv.Itoa(int(c.Partition)), committed,
			num(c.LogStart), num(c.LSO), num(c.HW), lag, text(strings.Join(cutRemarks(c), "; ")))
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
	if c.Committed > c.HW {
		out = append(out, fmt.Sprintf("committed is %d above HW: the log was truncated under the group", c.Committed-c.HW))
	}
	return out
}

func writeTopology(md *mdWriter, r *audit.Report, t Tally) {
	if len(r.Edges) == 0 {
		return
	}
	md.s("## Pipeline\n\n")
	md.s("Each hop counts the inputs kaudit judged")
	if t.Judged > 0 {
		md.f(" (%s in all: %s, as the funnel's `judged` and the timeline count them)", num(t.Judged), judgedMeaning)
	}
	md.s("; a table's hop into a join counts its keys at the cut. Hops where records vanished are red.")
	var drawn int64
	for _, e := range r.Edges {
		drawn += e.Vanished
	}
	if other := t.Vanished - drawn; other > 0 && drawn >= 0 {
		md.f(" The drawing shows %s of the %s vanished records on its hops; of the others, %s.", num(drawn), num(t.Vanished), undrawn(t, other))
	}
	md.s("\n\n")
	md.s(Mermaid(r.Edges))
	md.s("\n")
}

// judgedMeaning defines the inputs kaudit judged, the one population the
// pipeline, the funnel's judged row and the timeline count.
const judgedMeaning = "the consumed inputs with a key that passed the app's steps, the vanished ones among them, less those whose copy still waits on a repartition topic"

// undrawn says what the vanished records the pipeline's hops do not show
// are: records deleted before the app read them are no input it judged.
func undrawn(t Tally, n int64) string {
	if src := t.LossByStage[audit.StageSource]; src == n {
		return pluralVerb(n, "was deleted from its source topic before the app read it (stage `source`): no input kaudit could judge", "were deleted from their source topic before the app read them (stage `source`): no inputs kaudit could judge")
	}
	return pluralVerb(n, "is named by no hop (see the findings)", "are named by no hop (see the findings)")
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

// funnelMeaning says what each hop of the funnel counts.
var funnelMeaning = map[string]string{
	"read":          "committed source records kaudit read (offsets below a partition's log start were deleted and are not among them)",
	"consumed":      "of those, the records below the group's committed offsets (the rest are pending: lag)",
	"judged":        "of those, the inputs kaudit judged against the stores: " + judgedMeaning,
	"repartitioned": "copies, not inputs: the committed copies on the repartition topics",
	"applied":       "of those copies, the ones below the group's committed offsets there",
	"joined":        "keys the joins were checked for",
	"output":        "records the app wrote to its output topics",
	"null-key":      "inputs with a null key, which Streams drops by design",
	"filtered":      "inputs the app's steps drop by design",
}

// funnelPopulation names what a hop counts: a change from one hop to the
// next is meaningful only within one population.
var funnelPopulation = map[string]string{"read": "inputs", "consumed": "inputs", "judged": "inputs", "repartitioned": "copies", "applied": "copies"}

func writeFunnel(md *mdWriter, r *audit.Report, t Tally) {
	recs := maps.Clone(r.Summary.Records)
	if len(recs) == 0 {
		return
	}
	_, consumed := recs["consumed"]
	if consumed && t.Judged > 0 {
		recs["judged"] = t.Judged
	}
	md.s("## Funnel by stage\n\n")
	keys := funnelKeys(recs)
	md.header("hop", ">records", ">change", "what it counts")
	for i, k := range keys {
		change := ""
		if i > 0 && funnelPopulation[k] != "" && funnelPopulation[k] == funnelPopulation[keys[i-1]] {
			d := recs[k] - recs[keys[i-1]]
			change = strconv.FormatInt(d, 10)
			if d > 0 {
				change = "+" + change
			}
		}
		meaning := funnelMeaning[k]
		if k == "judged" {
			meaning += judgedSplit(r, recs["consumed"]-t.Judged)
		}
		md.row(text(k), num(recs[k]), change, text(meaning))
	}
	md.s("\nA hop may legitimately hold fewer records than the one before (lag, null keys, filters, a `latest` reducer folding updates); the findings say which differences are losses. `read`, `consumed` and `judged` count inputs, `repartitioned` and `applied` count copies: the two are not compared.")
	if t.Judged > 0 {
		md.f(" The pipeline and the timeline count the %s inputs judged.", num(t.Judged))
	}
	if _, ok := recs["output"]; ok {
		md.s(" `output` counts the records the app wrote, not inputs: record caching folds several updates of a key into one record, and a join writes one for an update of any of its tables, so it is not compared with the inputs applied.")
	}
	md.s("\n\n")
}

// judgedSplit says what the consumed inputs not judged are, from the
// findings that count them: null keys, inputs the steps filter, and the
// rest, whose copies wait on a repartition topic.
func judgedSplit(r *audit.Report, notJudged int64) string {
	if notJudged <= 0 {
		return ""
	}
	var null, filtered int64
	for _, f := range r.Findings {
		switch f.Cause {
		case audit.CauseNullKey:
			null += max(f.Count, 1)
		case audit.CauseFiltered:
			filtered += max(f.Count, 1)
		}
	}
	var parts []string
	if null > 0 {
		parts = append(parts, fmt.Sprintf("%s with a null key (`null-key`)", num(null)))
	}
	if filtered > 0 {
		parts = append(parts, fmt.Sprintf("%s the steps drop (`filtered`)", num(filtered)))
	}
	if rest := notJudged - null - filtered; rest > 0 {
		parts = append(parts, fmt.Sprintf("%s for another reason the findings and notes give (a copy still `pending` on a repartition topic, a step that failed, outside --since or --until)", num(rest)))
	}
	return fmt.Sprintf(" (%s consumed inputs are not: %s)", num(notJudged), strings.Join(parts, ", "))
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

func writeTimeline(md *mdWriter, r *audit.Report, t Tally, ms []audit.Minute, windows []Window, runs []run, o Options) {
	if len(ms) == 0 {
		return
	}
	md.s("## Timeline\n\n")
	if o.SVGPath != "" {
		md.f("![Timeline of %s](%s)\n\n", text(orDash(r.AppID)), linkTarget(o.SVGPath))
	}
	if len(windows) == 0 {
		md.s("No incident window stands out in the data: no aborted transactions, no gap in production, no vanished records.\n\n")
	} else {
		md.s("Incident windows found in the data (minutes with aborted transactions, a gap in production or vanished records, runs joined across up to two quiet minutes):\n\n")
		for _, w := range windows {
			md.f("- **%s – %s UTC** (%s): %s, %s with (almost) no production, %s of the vanished records\n",
				w.Start.Format("2006-01-02 15:04"), w.End.Format("15:04"), plural(int64(w.End.Sub(w.Start)/time.Minute), "minute"),
				plural(int64(w.Aborted), "aborted transaction"), plural(int64(w.GapMinutes), "minute"), num(w.Vanished))
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
	md.s("\n`produced` counts the inputs kaudit judged, by their timestamps.")
	if t.Vanished != t.Timed {
		md.f(" The timeline places %s of the %s vanished records: the inputs kaudit read, at their timestamps", num(t.Timed), num(t.Vanished))
		if other := t.Vanished - t.Timed; other == t.Gone+t.Outputs+t.Unplaced {
			var parts []string
			if t.Gone > 0 {
				parts = append(parts, pluralVerb(t.Gone, "offset gone from Kafka", "offsets gone from Kafka"))
			}
			if t.Outputs > 0 {
				parts = append(parts, plural(t.Outputs, "join output"))
			}
			if t.Unplaced > 0 {
				parts = append(parts, pluralVerb(t.Unplaced, "record no offset names", "records no offset names"))
			}
			md.f("; the other %s (%s) carry no time kaudit could read", num(other), strings.Join(parts, ", "))
		} else {
			md.f("; the other %s carry no time kaudit could read", num(t.Vanished-t.Timed))
		}
		md.s(".")
	}
	md.s("\n\n")
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

// writeKnownIssues lists, once each, the known Kafka issues whose
// signature the findings match, judged against the given versions; those
// the versions are not affected by are named in one line, not listed as
// matches. The evidence a known bug leaves (the report's signatures)
// comes first.
func writeKnownIssues(md *mdWriter, r *audit.Report, o Options) {
	type match struct {
		k      KnownIssue
		causes []string
	}
	var matches []match
	at := map[string]int{}
	for _, c := range causesIn(r.Findings) {
		if sev := c.Severity(); sev != audit.SeverityLoss && sev != audit.SeverityAnomaly {
			continue
		}
		for _, k := range issuesFor(c) {
			i, ok := at[k.ID]
			if !ok {
				i = len(matches)
				at[k.ID] = i
				matches = append(matches, match{k: k})
			}
			matches[i].causes = append(matches[i].causes, "`"+string(c)+"`")
		}
	}
	if len(matches) == 0 && len(r.Signatures) == 0 {
		return
	}
	md.s("## Known Kafka issues\n\n")
	if len(r.Signatures) > 0 {
		md.s("The evidence holds the signature of a known bug:\n\n")
		md.header("issue", "evidence", "offsets", ">findings", "fixed in", "keys")
		for _, sg := range r.Signatures {
			issue := sg.Issue
			if sg.Candidate {
				issue += " (consistent with, not proven)"
			}
			var keys []string
			for _, k := range sg.Keys {
				keys = append(keys, keyText(k))
			}
			md.row(text(issue), text(fmt.Sprintf("%s/%d", sg.Topic, sg.Partition)), fmt.Sprintf("%d–%d", sg.From, sg.To),
				num(sg.Findings), text(strings.Join(sg.FixedIn, ", ")), cell(strings.Join(keys, ", "), 200))
		}
		md.s("\n")
		for _, sg := range r.Signatures {
			md.f("- %s\n", text(sg.Detail))
		}
		md.s("\n")
	}
	var listed int
	var notAffected []string
	for _, m := range matches {
		k := m.k
		v, which, flag := o.issueVersion(k)
		st := k.Status(v)
		if v != "" && (st == StatusFixed || st == StatusNotAffected) {
			notAffected = append(notAffected, fmt.Sprintf("%s (%s in your %s %s)", k.ID, map[IssueStatus]string{StatusFixed: "fixed", StatusNotAffected: "not present"}[st], which, v))
			continue
		}
		if listed == 0 {
			md.s("Issues whose signature these findings match:\n\n")
		}
		listed++
		md.f("- **%s** (%s): %s. %s %s.", k.ID, strings.Join(m.causes, ", "), k.Title, k.Mechanism, capitalize(k.Versions()))
		switch {
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
	if listed > 0 {
		md.s("\n")
	}
	if len(notAffected) > 0 {
		md.f("Not listed, as your versions do not have them: %s.\n\n", text(strings.Join(notAffected, ", ")))
	}
}

// severityRank orders the postmortem's findings: losses, anomalies,
// risks, then information.
var severityRank = map[audit.Severity]int{audit.SeverityLoss: 0, audit.SeverityAnomaly: 1, audit.SeverityRisk: 2, audit.SeverityInfo: 3}

func writeFindings(md *mdWriter, r *audit.Report, o Options) {
	md.s("## Findings by cause\n\n")
	if len(r.Findings) == 0 {
		md.s("No findings.\n\n")
		return
	}
	by := map[audit.Cause][]int{} // indices, not copies: reports can hold many findings
	for i, f := range r.Findings {
		by[f.Cause] = append(by[f.Cause], i)
	}
	causes := causesIn(r.Findings)
	slices.SortStableFunc(causes, func(a, b audit.Cause) int {
		return severityRank[r.Findings[by[a][0]].Severity] - severityRank[r.Findings[by[b][0]].Severity]
	})
	for _, c := range causes {
		idx := by[c]
		var recs int64
		for _, i := range idx {
			recs += max(r.Findings[i].Count, 1)
		}
		sev := r.Findings[idx[0]].Severity
		md.f("### `%s`: %s, %s", c, sev, plural(int64(len(idx)), "finding"))
		if sev == audit.SeverityLoss || sev == audit.SeverityInfo {
			md.f(", %s", plural(recs, "record"))
		}
		md.s("\n\n")
		md.s(Explain(c))
		var ids []string
		for _, k := range issuesFor(c) {
			if v, _, _ := o.issueVersion(k); v == "" || k.Status(v) == StatusAffected || k.Status(v) == StatusUnknown {
				ids = append(ids, k.ID)
			}
		}
		if len(ids) > 0 && (sev == audit.SeverityLoss || sev == audit.SeverityAnomaly) {
			md.f(" Its signature matches %s (see *Known Kafka issues*).", strings.Join(ids, ", "))
		}
		md.s("\n\n")
		md.header("where", ">records", "key", "time", "what the evidence shows")
		for _, i := range idx[:min(len(idx), mdRowsPerCause)] {
			f := r.Findings[i]
			w := where(f.Topic, f.Partition)
			if f.Offset >= 0 {
				w += fmt.Sprintf("@%d", f.Offset)
			} else if f.Stage == audit.StageJoin {
				w += " (no record)"
			}
			md.row(text(w), num(max(f.Count, 1)), cell(keyText(f.Key), 60), msStamp(f.Timestamp), findingWhat(f))
		}
		if n := len(idx) - mdRowsPerCause; n > 0 {
			md.f("\n… and %d more `%s` findings (all of them are in `--format csv` and `--format json`).\n", n, c)
		}
		md.s("\n")
	}
}

// findingWhat is a finding's detail with its expected and actual values
// and its producer, for one table cell: values spaced so that they wrap.
func findingWhat(f audit.Finding) string {
	var parts []string
	if f.Detail != "" {
		parts = append(parts, cell(f.Detail, mdCellMax))
	}
	if f.Expected != "" {
		parts = append(parts, "**expected** "+cell(spaced(f.Expected), mdCellMax))
	}
	if f.Actual != "" {
		parts = append(parts, "**actual** "+cell(spaced(f.Actual), mdCellMax))
	}
	if p := producer(f); p != "" {
		parts = append(parts, "**producer** "+text(p))
	}
	return strings.Join(parts, "; ")
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
			if k := keyText(f.Key); k != "" {
				md.f(", key %s", cell(k, 60))
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
				cell(spaced(h.Expected), mdCellMax), cell(spaced(h.Actual), mdCellMax), cell(h.Note, mdCellMax))
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

// writeHowTo gives the details of the steps of "What to do next" that
// need more than a line: the replay commands, the ranges to recover, the
// keys to re-emit, the transactions to abort, the settings to fix.
func writeHowTo(md *mdWriter, r *audit.Report, t Tally, o Options) {
	var b strings.Builder
	h := &mdWriter{b: &b}
	boot := o.ReplayBootstrap
	if boot == "" {
		boot = "BOOTSTRAP"
	}
	boot = shellQuote(boot)
	replay, gone := t.Replay, t.GoneRanges
	if t.AppDropped+t.Unapplied > 0 {
		h.s("### Find why the app wrote nothing, and fix it before replaying\n\n")
		if t.AppDropped > 0 {
			h.f("The app consumed %s and wrote nothing for %s (`dropped`): its own processing swallowed %s, where the copies of the inputs before and after %s are on the repartition topic. ",
				plural(t.AppDropped, "input"), map[bool]string{true: "it", false: "them"}[t.AppDropped == 1], map[bool]string{true: "it", false: "them"}[t.AppDropped == 1], map[bool]string{true: "it", false: "them"}[t.AppDropped == 1])
		}
		if t.Unapplied > 0 {
			h.f("For %s (`unapplied`) the range that would hold the copies is purged: the app dropped them, or applied them and the store lost them; the evidence cannot tell which. ", plural(t.Unapplied, "input"))
		}
		h.s("A replay into the app as it is gives it the same records again, and what dropped them once drops them again. Before replaying:\n\n" +
			"1. Read the app's log at the times below: a deserialization or processing exception handler that logs and continues (`LogAndContinueExceptionHandler`, a `try`/`catch` in a processor), a warning naming the key.\n" +
			"2. Check the steps before the re-key for each record below: a `filter`, a `split()` branch none takes, a `flatMap` or `flatMapValues` that returns nothing for it.\n" +
			"3. Fix it and deploy the fix; then replay (below).\n\n")
		h.header("cause", "where", "key", "written (UTC)")
		for _, f := range slices.Concat(t.Dropped, t.UnappliedAt)[:min(len(t.Dropped)+len(t.UnappliedAt), mdRanges)] {
			h.row("`"+text(string(f.Cause))+"`", text(findingWhere(f)), cell(orDash(keyText(f.Key)), 60), text(orDash(msStamp(f.Timestamp))))
		}
		if n := len(t.Dropped) + len(t.UnappliedAt) - mdRanges; n > 0 {
			h.f("\n… and %d more (`--format csv` lists every one).\n", n)
		}
		h.s("\n")
	}
	if len(replay) > 0 {
		h.s("### Replay the vanished inputs that Kafka still holds\n\n")
		h.header("topic", ">partition", ">from offset", ">to offset", ">records")
		writeRanges(h, replay, nil)
		h.s("\nCopy each record to files (its key, and its value byte for byte: binary Avro survives), check them, then produce them back to the same partition")
		if len(o.ReplayFlags) > 0 {
			h.s(" (the client's security settings are the `-X` flags; set the variables they name, kaudit never prints a secret)")
		}
		h.s(":\n\n")
		for _, n := range o.ReplayNotes {
			h.f("- %s\n", text(n))
		}
		if len(o.ReplayNotes) > 0 {
			h.s("\n")
		}
		h.s("```sh\n")
		shown := 0
		for _, rs := range byPartition(replay[:min(len(replay), mdReplayCommand)]) {
			h.s(ReplayCommands(rs, boot, o.ReplayFlags))
			shown += len(rs)
		}
		h.s("```\n\n")
		if n := len(replay) - shown; n > 0 {
			h.f("… and %d more ranges (%d offsets), built the same way (`--format csv` lists every offset).\n\n", n, total(replay[shown:]))
		}
		h.s("Be aware of what a replay does. It appends copies at new offsets of the source topic, and the application processes them as new input: " +
			"a `latest` reducer converges, but `count` and `sum` reducers, and every other consumer of the topic, count again whatever had in fact been applied. " +
			"The copies get new timestamps (windowed operations see them late) and lose their headers. A key travels as a command-line argument: " +
			"one with a NUL byte or a trailing newline (a Confluent Avro key starts with a NUL) needs a byte-exact copier. Take a `kaudit capture` before replaying so that this evidence survives.\n\n")
	}
	if len(gone) > 0 {
		h.s("### Recover what Kafka no longer holds\n\nThese offsets are gone from Kafka (deleted by retention, purged, or truncated). " +
			"Records of an internal topic (repartition, changelog) can be derived again from the source records they came from, when those are still readable " +
			"(each finding's detail names the candidates); records of a source topic must come from the system that produced them.\n\n")
		role := map[string]string{}
		for _, c := range r.Cut {
			role[c.Topic] = c.Role
		}
		h.header("topic", ">partition", ">from offset", ">to offset", ">offsets", "recover from")
		writeRanges(h, gone, func(rg Range) string {
			switch role[rg.Topic] {
			case "repartition", "changelog":
				return "the source records (see the findings' detail)"
			case "source":
				return "the producing system"
			}
			return "the producing system, or the source records if the topic is internal"
		})
		h.s("\n")
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
		h.f("### Re-emit %s\n\nThe join re-emits a key whenever one of its tables updates, so replaying the inputs above rebuilds these outputs. Where the tables are right and only the output is wrong, re-emit the keys (an update of the left table's record rebuilds the output). Keys: ", plural(int64(len(joins)), "join output"))
		var keys []string
		for _, f := range joins[:min(len(joins), mdJoinKeys)] {
			keys = append(keys, cell(orDash(keyText(f.Key)), 40))
		}
		h.s(strings.Join(keys, ", "))
		if n := len(joins) - mdJoinKeys; n > 0 {
			h.f(" and %d more", n)
		}
		h.s(".\n\n")
	}
	if len(hanging) > 0 {
		h.f("### Abort the hanging transactions\n\nA hanging transaction holds its partition's LSO: %s. Confirm with `kafka-transactions.sh find-hanging`, then abort it (this writes an ABORT marker; kaudit itself never does):\n\n```sh\n", text(whoStalls(r, hanging)))
		for _, f := range hanging {
			h.f("kafka-transactions.sh --bootstrap-server %s abort --topic %s --partition %d --start-offset %d\n", boot, shellQuote(f.Topic), f.Partition, f.Offset)
		}
		h.s("```\n\n")
	}
	if len(checkpoints) > 0 {
		h.f("### Do not restart on the bad checkpoints\n\n%s ahead of what the changelog holds. "+
			"Before the next start of the affected instances, remove the task directories concerned (or the whole state directory) "+
			"so that Streams restores the stores from their changelogs instead of trusting the checkpoint.\n\n",
			pluralVerb(int64(len(checkpoints)), "checkpoint is", "checkpoints are"))
	}
	if len(dups) > 0 {
		h.f("### Correct what was counted twice\n\n%s applied twice in committed data. "+
			"A committed write cannot be undone: a `count` or `sum` store, and whatever consumed the output, is over by these inputs until corrected by hand "+
			"(for example with a compensating input). A `latest` store is unaffected.\n\n",
			pluralVerb(int64(len(dups)), "input was", "inputs were"))
	}
	if len(undecodable) > 0 {
		h.f("### Give kaudit the schemas\n\n%s could not be decoded, so their content was not compared. "+
			"Pass the schemas (`--schemas DIR` or `--schema-registry-url`) or the right `--key-serde`/`--value-serde` and run again.\n\n",
			plural(int64(len(undecodable)), "record"))
	}
	if len(risks) > 0 {
		h.s("### Fix the risky settings\n\n")
		for _, f := range risks {
			where := f.Topic
			if where == "" {
				where = "cluster"
			}
			h.f("- %s: %s\n", text(where), cell(f.Detail, 200))
		}
		h.s("\n")
	}
	if b.Len() == 0 {
		return
	}
	md.s("## How to do it\n\n")
	md.s(b.String())
}

// byPartition groups sorted ranges by topic and partition.
func byPartition(rs []Range) [][]Range {
	var out [][]Range
	for i, rg := range rs {
		if i > 0 && rs[i-1].Topic == rg.Topic && rs[i-1].Partition == rg.Partition {
			out[len(out)-1] = append(out[len(out)-1], rg)
			continue
		}
		out = append(out, []Range{rg})
	}
	return out
}

// ReplayCommands is the shell that copies the records of rs, ranges of
// one topic partition, to files, one key file and one value file per
// offset (kcat's -f '%s' writes the value byte for byte), and produces
// them back to the same partition, each value file as one message: one
// loop over the partition's offsets to copy, one to produce. boot is
// shell-quoted already; flags are kcat -X flags.
func ReplayCommands(rs []Range, boot string, flags []string) string {
	if len(rs) == 0 {
		return ""
	}
	x := ""
	if len(flags) > 0 {
		x = " " + strings.Join(flags, " ")
	}
	rg := rs[0]
	var offsets []string
	for _, r := range rs {
		if r.Count > 1 {
			offsets = append(offsets, fmt.Sprintf("$(seq %d %d)", r.From, r.To()))
		} else {
			offsets = append(offsets, num(r.From))
		}
	}
	list := strings.Join(offsets, " ")
	t, base := shellQuote(rg.Topic), shellQuote(fmt.Sprintf("replay-%s-%d-", rg.Topic, rg.Partition))
	var b strings.Builder
	fmt.Fprintf(&b, "for o in %s; do\n", list)
	fmt.Fprintf(&b, "  kcat -C -q -b %s%s -t %s -p %d -o \"$o\" -c 1 -e -f '%%k' > %s\"$o.key\"\n", boot, x, t, rg.Partition, base)
	fmt.Fprintf(&b, "  kcat -C -q -b %s%s -t %s -p %d -o \"$o\" -c 1 -e -f '%%s' > %s\"$o.value\"\n", boot, x, t, rg.Partition, base)
	b.WriteString("done\n")
	fmt.Fprintf(&b, "for o in %s; do\n", list)
	fmt.Fprintf(&b, "  kcat -P -q -b %s%s -t %s -p %d -k \"$(cat %s\"$o.key\")\" %s\"$o.value\"\n", boot, x, t, rg.Partition, base, base)
	b.WriteString("done\n")
	return b.String()
}

// writeRanges writes range rows, at most mdRanges of them, with an extra
// column from extra when it is not nil.
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
