package report

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/kaudit/kaudit/audit"
)

// Options are the renderer settings that do not come from the report.
type Options struct {
	// Now is the rendering time; zero means time.Now. Tests pin it.
	Now time.Time
	// KafkaVersion is the Kafka version in use (--kafka-version, e.g.
	// "3.6.1"); known issues are then judged against it.
	KafkaVersion string
	// StreamsVersion is the Kafka Streams client's version
	// (--streams-version): client bugs are judged against it, never
	// against the brokers' KafkaVersion.
	StreamsVersion string
	// SVGPath is where the timeline picture was written; the Markdown
	// links it when set.
	SVGPath string
	// ReplayBootstrap is the bootstrap server written into replay command
	// lines; empty means the placeholder BOOTSTRAP.
	ReplayBootstrap string
	// ReplayFlags are the client's security settings as kcat -X flags,
	// secrets as environment variable references; ReplayNotes say what
	// must be prepared for them (a JKS store converted to PEM).
	ReplayFlags, ReplayNotes []string
	// Width is the terminal's width the table format fits, wrapping
	// key and detail; 0 means DefaultWidth.
	Width int
	// Wide prints the table unwrapped and uncut (--wide).
	Wide bool
	// Plain prints the table format as aligned lines without a box, every
	// cell whole: for output that is not a terminal.
	Plain bool
	// MinSeverity, when set, leaves the findings below it out of the
	// table format (counted under it): --min-severity loss shows the
	// losses alone.
	MinSeverity audit.Severity
	// Duration is how long the audit took (the Prometheus format).
	Duration time.Duration
	// Provenance says what made the report, for the postmortem.
	Provenance Provenance
}

// Provenance is what made a report: kaudit's version, the command line
// (secrets redacted) and the spec with its hash.
type Provenance struct {
	Version     string
	CommandLine string
	SpecFile    string
	SpecSHA256  string
	// SavedSpec is where --save-spec wrote the inferred spec ("" for
	// nowhere): the file whose sha256 the provenance names.
	SavedSpec string
}

// DefaultWidth is the table's width where no terminal says one.
const DefaultWidth = 160

func (o Options) now() time.Time {
	if o.Now.IsZero() {
		return time.Now().UTC()
	}
	return o.Now.UTC()
}

// Formats lists the format names Render accepts.
var Formats = []string{"md", "html", "csv", "json", "table", "prom"}

// ErrUnknownFormat is returned by Render for a format it does not know.
var ErrUnknownFormat = errors.New("unknown format")

// Render writes r to w in format: md, csv, json, table or prom.
func Render(w io.Writer, format string, r *audit.Report, o Options) error {
	if r == nil {
		return errors.New("render: nil report")
	}
	switch format {
	case "md":
		return Markdown(w, r, o)
	case "csv":
		return CSV(w, r)
	case "json":
		return JSON(w, r)
	case "html":
		return HTML(w, r, o)
	case "table":
		return TableWith(w, r, o)
	case "prom":
		return PromWith(w, r, o)
	}
	return fmt.Errorf("render %q: %w (want one of %s)", format, ErrUnknownFormat, strings.Join(Formats, ", "))
}

// FormatFor picks the output format: explicit when given (aliases such as
// "markdown" are normalised), else from outputPath's extension (.md,
// .markdown, .csv, .json, .prom), else "table" (a terminal, or a file whose
// extension says nothing).
func FormatFor(outputPath, explicit string) string {
	if explicit != "" {
		switch f := strings.ToLower(explicit); f {
		case "markdown":
			return "md"
		case "txt", "text":
			return "table"
		case "prometheus":
			return "prom"
		default:
			return f
		}
	}
	switch strings.ToLower(filepath.Ext(outputPath)) {
	case ".md", ".markdown":
		return "md"
	case ".html", ".htm":
		return "html"
	case ".csv":
		return "csv"
	case ".json":
		return "json"
	case ".prom":
		return "prom"
	}
	return "table"
}
