package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// appRun is one run of the Java drill app (one JVM).
type appRun struct {
	cmd     *exec.Cmd
	log     string
	mu      sync.Mutex
	running bool // saw "-> RUNNING" at least once
	lines   []string
	exited  chan struct{}
	err     error
}

// appOpts are the app's fault and tuning flags (system properties of DrillApp).
type appOpts struct {
	purgeMs      int64 // repartition.purge.interval.ms; 0: Streams' default (30 s)
	commitMs     int64 // commit.interval.ms; 0: Streams' EOS default (100 ms)
	dropOrders   []string
	dropKeys     map[string][]string // source topic -> source record keys the app swallows
	slowRepartMs int64
	rf           int
	noCache      bool     // statestore.cache.max.bytes=0: every update goes downstream at once
	kafkaTimeout bool     // the clients' own max.block.ms (60 s) instead of the seed's 18,000,000
	streams      string   // Kafka Streams version of the app's build ("": the broker's)
	sessionMs    int      // the main consumer's session.timeout.ms (0: the app's 6000)
	props        []string // more -D system properties, "name=value"
}

// startApp starts the app with state dir stateDir, logging to dir/app-N.log, and writes its
// describe() text to dir/describe.txt.
func (d *drill) startApp(ctx context.Context, dir, stateDir string, o appOpts, n int) (*appRun, error) {
	props := []string{
		"-Dapp.id=" + appID,
		"-Ddescribe.file=" + filepath.Join(dir, "describe.txt"),
		fmt.Sprintf("-Drf=%d", max(o.rf, 1)),
	}
	if o.purgeMs > 0 {
		props = append(props, fmt.Sprintf("-Dpurge.interval.ms=%d", o.purgeMs))
	}
	if o.commitMs > 0 {
		props = append(props, fmt.Sprintf("-Dcommit.interval.ms=%d", o.commitMs))
	}
	if len(o.dropOrders) > 0 {
		props = append(props, "-Ddrop.orders="+strings.Join(o.dropOrders, ","))
	}
	for _, t := range sourceTopics {
		if len(o.dropKeys[t]) > 0 {
			props = append(props, "-Ddrop.keys."+t+"="+strings.Join(o.dropKeys[t], ","))
		}
	}
	if o.sessionMs > 0 {
		props = append(props, fmt.Sprintf("-Dsession.timeout.ms=%d", o.sessionMs))
	}
	for _, p := range o.props {
		props = append(props, "-D"+p)
	}
	if o.kafkaTimeout {
		props = append(props, "-Dseed.timeouts=false")
	}
	if o.noCache {
		props = append(props, "-Dcache.bytes=0")
	}
	if o.slowRepartMs > 0 {
		props = append(props, fmt.Sprintf("-Dslow.repartition.ms=%d", o.slowRepartMs))
	}
	args := append([]string{"-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-Djava.io.tmpdir=" + filepath.Join(d.o.work, "tmp")}, props...)
	lib := d.appLibFor(o.streams)
	cp := filepath.Join(lib, "classes") + ":" + filepath.Join(lib, "lib") + "/*"
	args = append(args, "-cp", cp, "kaudit.drill.DrillApp", d.bootstrap, stateDir, d.regURL)
	a, err := d.spawnJava(args, filepath.Join(dir, fmt.Sprintf("app-%d.log", n)))
	if err != nil {
		return nil, err
	}
	logf("app run %d started (pid %d), log %s", n, a.cmd.Process.Pid, a.log)
	return a, nil
}

// spawnJava starts one JVM with args, its stdout and stderr going to logPath and kept in
// memory; the run counts as RUNNING once it prints a Kafka Streams state change to RUNNING
// (DrillApp's "STATE … -> RUNNING", EosTestClient's "StateChange: … -> RUNNING"), or
// SmokeTestClient's SMOKE-TEST-CLIENT-STARTED (printed after its first REBALANCING -> RUNNING).
func (d *drill) spawnJava(args []string, logPath string) (*appRun, error) {
	if err := os.MkdirAll(filepath.Join(d.o.work, "tmp"), 0o755); err != nil {
		return nil, fmt.Errorf("create tmp dir: %w", err)
	}
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create app log: %w", err)
	}
	a := &appRun{log: logPath, exited: make(chan struct{})}
	a.cmd = exec.Command("java", args...)
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	a.cmd.Stdout, a.cmd.Stderr = pw, pw
	if err := a.cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start the app: %w", err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(f, line)
			a.mu.Lock()
			a.lines = append(a.lines, line)
			if (strings.HasPrefix(line, "STATE ") || strings.HasPrefix(line, "StateChange: ")) && strings.HasSuffix(line, "-> RUNNING") ||
				strings.HasSuffix(line, ": SMOKE-TEST-CLIENT-STARTED") ||
				// an app that prints nothing of its own (Kafka's WordCountDemo): Streams' log line
				strings.Contains(line, "stream-client [") && strings.Contains(line, "State transition from REBALANCING to RUNNING") {
				a.running = true
			}
			a.mu.Unlock()
		}
		f.Close()
	}()
	go func() {
		a.err = a.cmd.Wait()
		pw.Close()
		close(a.exited)
	}()
	return a, nil
}

func (a *appRun) isRunning() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.running
}

// waitRunning waits until the app reports RUNNING once.
func (a *appRun) waitRunning(ctx context.Context, timeout time.Duration) error {
	deadline := time.After(timeout)
	for !a.isRunning() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-a.exited:
			return fmt.Errorf("the app exited before RUNNING (%v); see %s", a.err, a.log)
		case <-deadline:
			return fmt.Errorf("the app not RUNNING after %s; see %s", timeout, a.log)
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// linesFrom returns the app's output lines from index i on, and the index after them.
func (a *appRun) linesFrom(i int) ([]string, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if i > len(a.lines) {
		i = len(a.lines)
	}
	return append([]string(nil), a.lines[i:]...), len(a.lines)
}

// find returns the first output line containing sub, from index from on.
func (a *appRun) find(sub string, from int) (string, bool) {
	ls, _ := a.linesFrom(from)
	for _, l := range ls {
		if strings.Contains(l, sub) {
			return l, true
		}
	}
	return "", false
}

// signal sends sig to the JVM (SIGSTOP, SIGCONT, SIGTERM).
func (a *appRun) signal(sig syscall.Signal) {
	if a.alive() {
		_ = a.cmd.Process.Signal(sig)
	}
}

// kill9 kills the app with SIGKILL, mid-whatever it was doing.
func (a *appRun) kill9() {
	select {
	case <-a.exited:
		return
	default:
	}
	_ = a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.exited
	logf("app pid %d killed -9", a.cmd.Process.Pid)
}

// stop sends SIGTERM (the app's shutdown hook closes Kafka Streams cleanly, which commits and
// writes .checkpoint files) and waits; kill -9 after 90 s.
func (a *appRun) stop() error {
	select {
	case <-a.exited:
		return fmt.Errorf("the app had already exited (%v); see %s", a.err, a.log)
	default:
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.exited:
		return nil
	case <-time.After(90 * time.Second):
		a.kill9()
		return fmt.Errorf("the app ignored SIGTERM for 90s; killed -9; see %s", a.log)
	}
}

// alive reports whether the JVM still runs.
func (a *appRun) alive() bool {
	select {
	case <-a.exited:
		return false
	default:
		return true
	}
}
