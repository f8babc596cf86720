// Command probe re-runs the safety probe of issue R on kaudit: it mutates
// kaudit's own fixtures, injects faults into an in-process kfake cluster,
// hands kaudit secrets, and prints what the built binary did with each:
// exit codes, panics, hangs, writes, leaked secrets, confident wrong
// verdicts and misleading causes. See README.md for the oracle.
//
//	go run ./testdata/probe [-n 1400] [-seed 1] [-jobs 2] [-sections evidence,bad,live,secrets,race]
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

func main() {
	n := flag.Int("n", 1400, "mutations of the fixtures")
	seed := flag.Uint64("seed", 1, "seed of the mutations")
	damaged := flag.Bool("damaged", true, "also run the damaged bundles (issue AF) in the evidence section")
	jobs := flag.Int("jobs", runtime.NumCPU(), "kaudit runs at a time")
	timeout := flag.Duration("timeout", 60*time.Second, "a run longer than this is a hang")
	sections := flag.String("sections", "evidence,bad,live,secrets,race", "comma-separated sections to run")
	bin := flag.String("kaudit", "", "kaudit binary to probe (default: go build ./cmd/kaudit once)")
	verbose := flag.Bool("v", false, "list every run that is not handled, and the judgement cases")
	keep := flag.Bool("keep", false, "keep the work directory")
	flag.StringVar(&liveKeys, "live-keys", "", "comma-separated request key names: inject faults on these only (default every key kaudit sends)")
	flag.StringVar(&racePkgs, "race-pkgs", racePkgs, "comma-separated packages for the race section")
	flag.Parse()
	if err := run(*n, *seed, *damaged, *jobs, *timeout, strings.Split(*sections, ","), *bin, *verbose, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "probe: "+format+"\n", args...)
}

// repoRoot is the module root above the working directory.
func repoRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "cmd", "kaudit")); err == nil {
				return d, nil
			}
		}
		p := filepath.Dir(d)
		if p == d {
			return "", fmt.Errorf("no kaudit module above the working directory")
		}
		d = p
	}
}

func run(n int, seed uint64, damaged bool, jobs int, timeout time.Duration, sections []string, bin string, verbose, keep bool) error {
	start := time.Now()
	root, err := repoRoot()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "kaudit-probe-")
	if err != nil {
		return err
	}
	if keep {
		logf("work dir %s", work)
	} else {
		defer os.RemoveAll(work)
	}
	if err := os.Chmod(work, 0o755); err != nil {
		return err
	}
	if bin == "" {
		bin = filepath.Join(work, "kaudit")
		logf("building ./cmd/kaudit")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/kaudit")
		cmd.Dir, cmd.Stderr = root, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build kaudit: %w", err)
		}
	} else if bin, err = filepath.Abs(bin); err != nil {
		return err
	}
	rev, _ := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	fmt.Printf("# kaudit safety probe: commit %s, seed %d, %d mutations, %d jobs, timeout %s\n\n", strings.TrimSpace(string(rev)), seed, n, jobs, timeout)
	var totals summary
	if slices.Contains(sections, "evidence") {
		rep, err := runEvidence(root, bin, work, seed, n, damaged, jobs, timeout, logf)
		if err != nil {
			return fmt.Errorf("evidence: %w", err)
		}
		printEvidence(rep, verbose)
		totals.addEvidence(rep)
	}
	if slices.Contains(sections, "bad") {
		rows, err := runBadCorpus(root, bin, work, jobs, timeout)
		if err != nil {
			return fmt.Errorf("bad corpus: %w", err)
		}
		printBad(rows, verbose)
		totals.addBad(rows)
	}
	// The race tests run beside the live faults, whose runs mostly wait.
	var races chan []raceResult
	if slices.Contains(sections, "race") {
		races = make(chan []raceResult, 1)
		if slices.Contains(sections, "live") {
			go func() { races <- runRace(root, logf) }()
		}
	}
	if slices.Contains(sections, "live") {
		lr, err := runLive(root, bin, work, timeout, logf)
		if err != nil {
			return fmt.Errorf("live: %w", err)
		}
		printLive(lr, verbose)
		totals.addLive(lr)
	}
	if slices.Contains(sections, "secrets") {
		sr, err := runSecrets(root, bin, work, timeout)
		if err != nil {
			return fmt.Errorf("secrets: %w", err)
		}
		printSecrets(sr, verbose)
		totals.secretRuns, totals.leaks = sr.runs, len(sr.leaks)
	}
	if races != nil {
		if !slices.Contains(sections, "live") {
			races <- runRace(root, logf)
		}
		rr := <-races
		printRace(rr)
		totals.race = rr
	}
	totals.print(time.Since(start))
	return nil
}
