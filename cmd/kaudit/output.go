package main

import (
	"slices"

	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v2"

	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/internal/dest"
	"github.com/kaudit/kaudit/report"
)

// provenance is the report's provenance: kaudit's version, the redacted
// command line, the spec and its sha256.
func provenance(args []string, specFile string) report.Provenance {
	p := report.Provenance{Version: versionString(), SpecFile: specFile}
	if len(args) > 0 {
		p.CommandLine = commandLine(append([]string{"kaudit"}, args[1:]...))
	}
	if specFile != "" {
		if b, err := os.ReadFile(specFile); err == nil {
			p.SpecSHA256 = fmt.Sprintf("%x", sha256.Sum256(b))
		}
	}
	return p
}

// output is one report to write: a file, or stdout (Path "" or "-"), in
// a format; Force (--force) lets it replace a file that exists.
type output struct {
	Path, Format string
	Force        bool
}

func (o output) stdout() bool { return o.Path == "" || o.Path == "-" }

// svg is where a Markdown report's timeline picture goes: beside it.
func (o output) svg() string {
	return strings.TrimSuffix(o.Path, filepath.Ext(o.Path)) + "-timeline.svg"
}

// outputFlags are --format and --output (repeatable) for a command that
// renders a report; def is its format on stdout.
func outputFlags(def string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "format", Usage: "md, html, table, json, csv or prom (default: " + def + ", or the format --output's name ends in)", EnvVars: env("format")},
		&cli.GenericFlag{Name: "output", Value: &listValue{}, Usage: "write the report to `FILE` (written whole or not at all); repeat it to write several formats of one run, each named by its extension (.md, .html, .json, .csv, .prom, .txt)", EnvVars: env("output")},
		forceFlag(),
	}
}

// forceFlag is --force: the files a command writes may replace files that
// exist (never an input, a symlink or anything but a regular file).
func forceFlag() cli.Flag {
	return &cli.BoolFlag{Name: "force", Usage: "replace the files --output (and --save-spec) name when they exist: a report run again (each night) overwrites the last; without it an existing file is refused", EnvVars: env("force")}
}

// listValue is a repeatable flag's values, one per occurrence, whole: a
// file name may hold a comma, which urfave/cli's slice flags split at.
type listValue []string

func (l *listValue) Set(v string) error { *l = append(*l, v); return nil }
func (l *listValue) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ", ")
}

// outputsOf is --output's values.
func outputsOf(c *cli.Context) []string {
	if l, ok := c.Generic("output").(*listValue); ok && l != nil {
		return *l
	}
	return nil
}

// readOutputs reads --output, --format and --force, and checks the
// formats before any work is done (the paths are checkWrites'). With one
// output (or none: stdout) --format, else the name's extension, else def
// gives the format; with several, each name's extension does.
func readOutputs(c *cli.Context, def string) ([]output, error) {
	paths := outputsOf(c)
	explicit := c.String("format")
	if len(paths) > 1 {
		if givenOnCommandLine(c, "format") {
			return nil, usagef("--format names the format of one report: with several --output, each file's extension says its format")
		}
		explicit = ""
	}
	if len(paths) == 0 {
		paths = []string{""}
	}
	var outs []output
	stdout := 0
	for _, p := range paths {
		o := output{Path: p, Format: report.FormatFor(p, explicit), Force: c.Bool("force")}
		if explicit == "" && (p == "" || p == "-") {
			o.Format = def
		}
		if !slices.Contains(report.Formats, o.Format) {
			return nil, usagef("--format %q: want md, html, table, json, csv or prom", o.Format)
		}
		if len(paths) > 1 && !o.stdout() && report.FormatFor(p, "") == "table" && !strings.EqualFold(filepath.Ext(p), ".txt") {
			return nil, usagef("--output %s: with several outputs, name each by its format's extension (.md, .html, .json, .csv, .prom or .txt)", p)
		}
		if o.stdout() {
			if stdout++; stdout > 1 {
				return nil, usagef("--output -: stdout is given twice")
			}
		}
		outs = append(outs, o)
	}
	return outs, nil
}

// outputDests are the files the outputs write, for checkWrites: each, and
// a Markdown report's timeline picture.
func outputDests(outs []output) []dest.Path {
	var paths []dest.Path
	for _, o := range outs {
		if o.stdout() {
			continue
		}
		paths = append(paths, dest.Path{Flag: "--output", Path: o.Path, Force: o.Force})
		if o.Format == "md" {
			paths = append(paths, dest.Path{Flag: "--output", Path: o.svg(), Force: o.Force})
		}
	}
	return paths
}

// notRunMetrics writes, for a prom output to a file of a run that could
// not run, metrics that say so (kaudit_run_success 0), so that a textfile
// collector does not keep serving the last run's verdict; it returns err.
func notRunMetrics(o diffOptions, err error) error {
	if !isNotRun(err) {
		return err
	}
	for _, out := range o.Outputs {
		if out.Format != "prom" || out.stdout() {
			continue
		}
		if werr := writeAtomic(out.Path, out.Force, func(w io.Writer) error { return report.PromNotRun(w, o.AppID, time.Now(), time.Since(o.started)) }); werr != nil {
			return fmt.Errorf("%w (and %w)", err, werr)
		}
	}
	return err
}

func readReport(path string) (*audit.Report, error) {
	f, err := openInput(path, maxReportBytes)
	if err != nil {
		return nil, usagef("read --baseline: %w", err)
	}
	defer f.Close()
	r, err := report.ReadJSON(f)
	if err != nil {
		return nil, usagef("read --baseline %s: %w", path, err)
	}
	return r, nil
}

// writeReport renders the report to each output: stdout, or a file
// through a temporary file renamed into place, so that no half-written
// report is left as if whole. A Markdown report gets its timeline picture
// beside it. The table format is plain (no box, aligned columns) where it
// goes to no terminal.
func writeReport(outs []output, rep *audit.Report, ropts report.Options, stdout io.Writer) error {
	for _, o := range outs {
		opts := ropts
		if o.stdout() {
			opts.Plain = !isTerminal(stdout)
			if err := report.Render(stdout, o.Format, rep, opts); err != nil {
				return err
			}
			continue
		}
		opts.Plain = true
		if o.Format == "md" && len(rep.Timeline) > 0 {
			if err := writeAtomic(o.svg(), o.Force, func(w io.Writer) error { return report.TimelineSVG(w, rep) }); err != nil {
				return err
			}
			opts.SVGPath = filepath.Base(o.svg())
		}
		if err := writeAtomic(o.Path, o.Force, func(w io.Writer) error { return report.Render(w, o.Format, rep, opts) }); err != nil {
			return err
		}
	}
	return nil
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// writeAtomic writes path whole or not at all, by kaudit's write rule
// (dest.Write): a file that exists only with force.
func writeAtomic(path string, force bool, write func(io.Writer) error) error {
	err := dest.Write(path, force, write)
	var refused *dest.Refused
	switch {
	case err == nil:
		return nil
	case errors.As(err, &refused):
		return usageError{Err: err}
	}
	return fmt.Errorf("write %s: %w", path, err)
}
