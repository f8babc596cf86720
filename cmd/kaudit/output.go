package main

import (
	"slices"

	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v2"

	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kaudit/kaudit/audit"
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
// a format.
type output struct{ Path, Format string }

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
	}
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

// readOutputs reads --output and --format, and checks them before any
// work is done: a format kaudit knows, a folder that exists. With one
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
		o := output{Path: p, Format: report.FormatFor(p, explicit)}
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
		} else if err := checkOutputDir(p); err != nil {
			return nil, err
		}
		outs = append(outs, o)
	}
	return outs, nil
}

// checkOutputDir refuses, before the work, an output whose folder does
// not exist or is no folder.
func checkOutputDir(path string) error {
	dir := filepath.Dir(path)
	info, err := os.Stat(dir)
	switch {
	case err != nil:
		return usagef("--output %s: the folder %s does not exist", path, dir)
	case !info.IsDir():
		return usagef("--output %s: %s is not a folder", path, dir)
	}
	return nil
}

// outputPaths are the files the outputs write: each, and a Markdown
// report's timeline picture.
func outputPaths(outs []output) []string {
	var paths []string
	for _, o := range outs {
		if o.stdout() {
			continue
		}
		paths = append(paths, o.Path)
		if o.Format == "md" {
			paths = append(paths, o.svg())
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
		if werr := writeAtomic(out.Path, func(w io.Writer) error { return report.PromNotRun(w, o.AppID, time.Now(), time.Since(o.started)) }); werr != nil {
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
			if err := writeAtomic(o.svg(), func(w io.Writer) error { return report.TimelineSVG(w, rep) }); err != nil {
				return err
			}
			opts.SVGPath = filepath.Base(o.svg())
		}
		if err := writeAtomic(o.Path, func(w io.Writer) error { return report.Render(w, o.Format, rep, opts) }); err != nil {
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

func writeAtomic(path string, write func(io.Writer) error) error {
	tmp, err := createTemp(path)
	if err != nil {
		return usagef("write %s: %w", path, errors.Unwrap(err))
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, errors.Unwrap(err))
	}
	return nil
}

// createTemp creates a new file beside path, with mode 0666 less the
// umask as any file a command writes (os.CreateTemp's is 0600).
func createTemp(path string) (*os.File, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	for range 100 {
		name := filepath.Join(dir, "."+base+".tmp-"+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("create a temporary file beside %s: %w", path, fs.ErrExist)
}
