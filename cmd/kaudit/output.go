package main

import (
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

// notRunMetrics writes, for a --format prom --output FILE run that could
// not run, metrics that say so (kaudit_run_success 0), so that a textfile
// collector does not keep serving the last run's verdict; it returns err.
func notRunMetrics(o diffOptions, err error) error {
	if !isNotRun(err) || o.Format != "prom" || o.Output == "" || o.Output == "-" {
		return err
	}
	if werr := writeAtomic(o.Output, func(w io.Writer) error { return report.PromNotRun(w, o.AppID, time.Now(), time.Since(o.started)) }); werr != nil {
		return fmt.Errorf("%w (and %w)", err, werr)
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

// writeReport renders to stdout, or to --output through a temporary file
// renamed into place, so that no half-written report is left as if whole.
// A Markdown report gets its timeline picture beside it.
func writeReport(o diffOptions, rep *audit.Report, ropts report.Options, stdout io.Writer) error {
	if o.Output == "" || o.Output == "-" {
		return report.Render(stdout, o.Format, rep, ropts)
	}
	if o.Format == "md" && len(rep.Timeline) > 0 {
		svg := strings.TrimSuffix(o.Output, filepath.Ext(o.Output)) + "-timeline.svg"
		if err := writeAtomic(svg, func(w io.Writer) error { return report.TimelineSVG(w, rep) }); err != nil {
			return err
		}
		ropts.SVGPath = filepath.Base(svg)
	}
	return writeAtomic(o.Output, func(w io.Writer) error { return report.Render(w, o.Format, rep, ropts) })
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
