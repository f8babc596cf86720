package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Issue R's chaos case on the real RF 3 cluster: one broker is killed -9 in the middle of
// `kaudit diff` and in the middle of `kaudit capture` (the capture then audited with
// `kaudit diff --snapshot`). The result must be the undisturbed run's report (verdict,
// summary and every finding), or `incomplete` with the missing evidence named and no finding
// the undisturbed run does not have (or the undisturbed run's own verdict, `loss` say, held
// by the findings it still proves, beside that missing evidence: the verdict is the worst
// that holds); never another verdict. Each trial kills a broker after a
// fraction of the undisturbed run's wall time (the group coordinator first, then others),
// checks that kaudit was still running when the kill landed (else it retries sooner), and
// restarts the broker and waits for full ISRs before the next one.

// chaosFractions are the points of the undisturbed run's wall time where a trial kills.
var chaosFractions = []float64{0.2, 0.5}

// chaosOutcome is one disturbed run's result, for the summary line.
type chaosOutcome struct {
	what    string
	victim  int32
	after   time.Duration
	result  string // "same", "incomplete: …", "no report (exit N): …"
	verdict string
}

// chaos runs the trials after the scenario's live audit (r.live); extra are the live audit's
// flags beyond the source (its --baseline-snapshot included).
func (r *scRun) chaos(ctx context.Context, extra ...string) error {
	if !r.d.o.chaos || r.d.brokers != 3 || r.live == nil {
		return nil
	}
	dir := filepath.Join(r.dir, "chaos")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	diffArgs := func(out string) []string {
		args := []string{"diff", "--bootstrap-server", r.d.bootstrap, "--app-id", appID,
			"--spec", filepath.Join(r.d.root, "drill", "kaudit.yaml"), "--topology", filepath.Join(r.dir, "describe.txt"),
			"--schema-registry-url", r.d.regURL, "--format", "json", "--output", out}
		return append(args, extra...)
	}
	schemas := filepath.Join(r.dir, "schemas")
	if err := exportSchemas(ctx, r.d.regURL, schemas); err != nil {
		return err
	}
	captureArgs := func(out string) []string {
		return []string{"capture", "--app-id", appID, "--bootstrap-server", r.d.bootstrap,
			"--topology", filepath.Join(r.dir, "describe.txt"), "--schemas", schemas, "--out", out}
	}
	snapshotDiff := func(name, bundle string) ([]byte, int, error) {
		out := filepath.Join(dir, name+".json")
		code, stderr, err := r.d.runKaudit(ctx, dir, name, "diff", "--snapshot", bundle, "--app-id", appID,
			"--spec", filepath.Join(r.d.root, "drill", "kaudit.yaml"), "--format", "json", "--output", out)
		if err != nil {
			return nil, code, err
		}
		b, err := os.ReadFile(out)
		if err != nil {
			return nil, code, fmt.Errorf("kaudit diff --snapshot %s exited %d without a report: %s", bundle, code, lastLines(stderr, 3))
		}
		return b, code, nil
	}

	// undisturbed: the live audit, and a capture of the same state audited offline
	liveDur, err := r.timeKaudit(ctx, dir, "diff-undisturbed", diffArgs(filepath.Join(dir, "diff-undisturbed.json")))
	if err != nil {
		return err
	}
	if err := compareReports(r.live.report, mustRead(filepath.Join(dir, "diff-undisturbed.json")), filepath.Join(dir, "diff-undisturbed.compare.txt"), false); err != nil {
		return fmt.Errorf("chaos: two undisturbed live audits differ: %w", err)
	}
	capDur, err := r.timeKaudit(ctx, dir, "capture-undisturbed", captureArgs(filepath.Join(dir, "capture-undisturbed")))
	if err != nil {
		return err
	}
	capBase, _, err := snapshotDiff("diff-capture-undisturbed", filepath.Join(dir, "capture-undisturbed"))
	if err != nil {
		return err
	}
	coord, err := r.d.groupCoordinator(ctx)
	if err != nil {
		return err
	}
	victims := []int32{coord, coord%3 + 1}

	var outcomes []chaosOutcome
	var bad []error
	for i, frac := range chaosFractions {
		victim := victims[i%len(victims)]
		// kaudit diff, a broker killed mid-run
		name := fmt.Sprintf("diff-kill%d", i+1)
		out := filepath.Join(dir, name+".json")
		after, code, stderr, err := r.disturbed(ctx, dir, name, diffArgs(out), time.Duration(frac*float64(liveDur)), victim)
		if err != nil {
			return err
		}
		oc := chaosOutcome{what: "diff", victim: victim, after: after}
		oc.result, oc.verdict, err = judgeDisturbed(r.live.report, out, code, stderr)
		outcomes = append(outcomes, oc)
		bad = append(bad, prefixed(fmt.Sprintf("kaudit diff with broker %d killed after %s", victim, after), err))

		// kaudit capture, a broker killed mid-run, then the bundle audited offline
		victim = victims[(i+1)%len(victims)]
		name = fmt.Sprintf("capture-kill%d", i+1)
		bundle := filepath.Join(dir, name)
		after, code, stderr, err = r.disturbed(ctx, dir, name, captureArgs(bundle), time.Duration(frac*float64(capDur)), victim)
		if err != nil {
			return err
		}
		oc = chaosOutcome{what: "capture", victim: victim, after: after}
		switch {
		case code != 0 && code != 3:
			oc.result = fmt.Sprintf("no bundle (exit %d): %s", code, lastLines(stderr, 1))
			if _, err := os.Stat(filepath.Join(bundle, "manifest.json")); err == nil {
				// a bundle was left: it must not audit to another verdict
				rep, code, err := snapshotDiff("diff-"+name, bundle)
				if err == nil {
					oc.result, oc.verdict, err = judgeDisturbed(capBase, "", code, "", rep)
				}
				bad = append(bad, prefixed(fmt.Sprintf("the bundle kaudit capture left (exit %d) with broker %d killed", code, victim), err))
			}
		default:
			rep, scode, err := snapshotDiff("diff-"+name, bundle)
			if err != nil {
				bad = append(bad, prefixed(fmt.Sprintf("kaudit capture (exit %d) with broker %d killed after %s", code, victim, after), err))
				oc.result = err.Error()
				break
			}
			oc.result, oc.verdict, err = judgeDisturbed(capBase, "", scode, "", rep)
			bad = append(bad, prefixed(fmt.Sprintf("kaudit capture (exit %d) with broker %d killed after %s, audited offline", code, victim, after), err))
		}
		outcomes = append(outcomes, oc)
	}
	for _, oc := range outcomes {
		logf("chaos: kaudit %s, broker %d killed -9 after %s: %s", oc.what, oc.victim, oc.after.Round(time.Millisecond), oc.result)
	}
	if err := writeJSON(filepath.Join(dir, "outcomes.json"), outcomesJSON(outcomes)); err != nil {
		return err
	}
	return allErrs(bad...)
}

func outcomesJSON(l []chaosOutcome) []map[string]any {
	var out []map[string]any
	for _, o := range l {
		out = append(out, map[string]any{"command": o.what, "victim": o.victim, "killed_after_ms": o.after.Milliseconds(), "result": o.result, "verdict": o.verdict})
	}
	return out
}

func mustRead(path string) []byte {
	b, _ := os.ReadFile(path)
	return b
}

// timeKaudit runs kaudit undisturbed and returns its wall time; it must exit 0, 1 or 3.
func (r *scRun) timeKaudit(ctx context.Context, dir, name string, args []string) (time.Duration, error) {
	t0 := time.Now()
	code, stderr, err := r.d.runKaudit(ctx, dir, name, args...)
	if err != nil {
		return 0, err
	}
	if code != 0 && code != 1 && code != 3 {
		return 0, fmt.Errorf("undisturbed kaudit %s exited %d: %s", name, code, lastLines(stderr, 3))
	}
	return time.Since(t0), nil
}

// disturbed runs kaudit with args and kills broker victim -9 after delay, while kaudit still
// runs (a kill that lands after kaudit exited is retried with half the delay, up to four
// times); then it restarts the broker and waits until every partition has its full ISR. It
// returns when the kill landed, kaudit's exit code and stderr.
func (r *scRun) disturbed(ctx context.Context, dir, name string, args []string, delay time.Duration, victim int32) (time.Duration, int, string, error) {
	for try := 0; ; try++ {
		c, cancel := context.WithTimeout(ctx, 5*time.Minute)
		cmd := exec.CommandContext(c, r.d.kaudit, args...)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stderr, &stderr
		if out := outputDir(args); out != "" {
			_ = os.RemoveAll(out)
		}
		t0 := time.Now()
		if err := cmd.Start(); err != nil {
			cancel()
			return 0, 0, "", fmt.Errorf("start kaudit %s: %w", name, err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var werr error
		exited := false
		select {
		case werr = <-done:
			exited = true
		case <-time.After(delay):
		}
		landed := time.Duration(0)
		if !exited {
			// SIGKILL from here, at a known instant; cluster.sh then waits for the JVM to go
			if err := r.d.signalNode(victim, syscall.SIGKILL); err != nil {
				cancel()
				return 0, 0, "", err
			}
			landed = time.Since(t0)
			if err := r.d.cluster(ctx, "kill9", fmt.Sprint(victim)); err != nil {
				cancel()
				return 0, 0, "", err
			}
			werr = <-done
		}
		took := time.Since(t0)
		cancel()
		_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("kaudit-%s-try%d.stderr", name, try+1)), stderr.Bytes(), 0o644)
		code := 0
		var ee *exec.ExitError
		switch {
		case werr == nil:
		case errors.As(werr, &ee):
			code = ee.ExitCode()
		default:
			return 0, 0, "", fmt.Errorf("run kaudit %s: %w", name, werr)
		}
		if landed > 0 {
			logf("chaos: kaudit %s: broker %d killed -9 after %s, kaudit exited %d after %s", name, victim, landed.Round(time.Millisecond), code, took.Round(time.Millisecond))
			if err := r.d.reviveBroker(ctx, victim); err != nil {
				return 0, 0, "", err
			}
		}
		if landed > 0 {
			return landed, code, stderr.String(), nil
		}
		if try == 4 {
			return 0, 0, "", fmt.Errorf("chaos: kaudit %s always exited before broker %d was killed (last delay %s)", name, victim, delay)
		}
		delay /= 2
		logf("chaos: kaudit %s ended before the kill landed; again with the kill after %s", name, delay)
	}
}

// signalNode sends sig to cluster node id (its pid file is cluster.sh's).
func (d *drill) signalNode(id int32, sig syscall.Signal) error {
	b, err := os.ReadFile(filepath.Join(d.o.work, "cluster", fmt.Sprintf("n%d.pid", id)))
	if err != nil {
		return fmt.Errorf("read the pid of node %d: %w", id, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return fmt.Errorf("pid file of node %d: %q", id, b)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("signal node %d (pid %d): %w", id, pid, err)
	}
	return nil
}

// outputDir is the --out of a capture's args.
func outputDir(args []string) string {
	if i := slices.Index(args, "--out"); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// judgeDisturbed compares a disturbed run's report (file out, or rep) with the undisturbed
// one: the same report is "same"; incomplete with missing evidence and no finding the
// undisturbed run lacks (but the unreadable ones naming what was not read) is "incomplete",
// and so is the undisturbed verdict itself with missing evidence named (a loss the read
// evidence proves stays the verdict: the worst that holds); no report at all (exit 4, a read
// that failed) is reported as such; anything else is an error.
func judgeDisturbed(base []byte, out string, code int, stderr string, rep ...[]byte) (string, string, error) {
	var b []byte
	if len(rep) > 0 {
		b = rep[0]
	} else {
		var err error
		if b, err = os.ReadFile(out); err != nil {
			if code == 4 {
				return fmt.Sprintf("no report (exit 4: could not run): %s", lastLines(stderr, 1)), "", nil
			}
			return "", "", fmt.Errorf("exit %d without a report: %s", code, lastLines(stderr, 3))
		}
	}
	var x, y struct {
		Summary struct {
			Verdict string   `json:"verdict"`
			Missing []string `json:"missing_evidence"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(base, &x); err != nil {
		return "", "", err
	}
	if err := json.Unmarshal(b, &y); err != nil {
		return "", "", fmt.Errorf("decode the disturbed report: %w", err)
	}
	if err := compareReports(base, b, os.DevNull, false); err == nil {
		return "same report as the undisturbed run", y.Summary.Verdict, nil
	}
	if (y.Summary.Verdict == "incomplete" || y.Summary.Verdict == x.Summary.Verdict) && len(y.Summary.Missing) > 0 {
		var a, c map[string]any
		_ = json.Unmarshal(base, &a)
		_ = json.Unmarshal(b, &c)
		fa := findingList(a, false)
		var extra []string
		for _, f := range findingList(c, false) {
			// an unreadable finding names a partition that was not read: that is the point
			if !slices.Contains(fa, f) && !strings.Contains(f, `"severity":"info"`) && !strings.Contains(f, `"cause":"unreadable"`) {
				extra = append(extra, f)
			}
		}
		if len(extra) > 0 {
			return "", y.Summary.Verdict, fmt.Errorf("incomplete, but with %d findings the undisturbed run does not have: %v", len(extra), head(extra, 3))
		}
		unread := 0
		for _, f := range findingList(c, false) {
			if strings.Contains(f, `"cause":"unreadable"`) {
				unread++
			}
		}
		return fmt.Sprintf("%s with missing evidence, %d partitions named unreadable, %d pieces of evidence missing, first: %s", y.Summary.Verdict, unread, len(y.Summary.Missing), lastLines(y.Summary.Missing[0], 1)), y.Summary.Verdict, nil
	}
	return "", y.Summary.Verdict, fmt.Errorf("verdict %s (undisturbed: %s) and a different report: see %s", y.Summary.Verdict, x.Summary.Verdict, out)
}

// groupCoordinator is the node id of the app group's coordinator.
func (d *drill) groupCoordinator(ctx context.Context) (int32, error) {
	adm, closeFn, err := d.admin()
	if err != nil {
		return 0, err
	}
	defer closeFn()
	res := adm.FindGroupCoordinators(ctx, appID)
	for _, c := range res {
		if c.Err != nil {
			return 0, fmt.Errorf("find the coordinator of %s: %w", appID, c.Err)
		}
		return c.NodeID, nil
	}
	return 0, fmt.Errorf("find the coordinator of %s: no answer", appID)
}

// reviveBroker starts broker id again and waits until every partition has every replica in
// its ISR.
func (d *drill) reviveBroker(ctx context.Context, id int32) error {
	t0 := time.Now()
	if err := d.cluster(ctx, "start-node", fmt.Sprint(id)); err != nil {
		return err
	}
	if err := d.cluster(ctx, "wait-node", fmt.Sprint(id)); err != nil {
		return err
	}
	adm, closeFn, err := d.admin()
	if err != nil {
		return err
	}
	defer closeFn()
	deadline := time.Now().Add(90 * time.Second)
	for {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		md, err := adm.Metadata(c)
		cancel()
		short := 0
		if err == nil {
			for _, td := range md.Topics {
				for _, pd := range td.Partitions {
					if len(pd.ISR) < len(pd.Replicas) || pd.Leader < 0 {
						short++
					}
				}
			}
			if short == 0 {
				logf("chaos: broker %d back, every ISR full, in %s", id, time.Since(t0).Round(100*time.Millisecond))
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("chaos: %d partitions short of their ISR 90s after broker %d restarted (%v)", short, id, err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(300 * time.Millisecond)
	}
}
