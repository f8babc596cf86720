// Command kaudit audits a Kafka Streams application after an incident and
// reports, record by record, what was lost, where and why. It never writes
// to the cluster it reads.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"github.com/xrash/smetrics"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/internal/dest"
)

// Exit codes, decided in exitCode only.
const (
	exitClean       = 0
	exitFindings    = 1
	exitUsage       = 2
	exitIncomplete  = 3
	exitNotRun      = 4
	exitInterrupted = 130
)

// exitStatusHelp is the exit status of the commands that judge a verdict
// (diff, merge, demo, ledger, txns).
const exitStatusHelp = `EXIT STATUS
   0    verdict clean
   1    verdict loss or anomaly
   2    usage or configuration error
   3    verdict incomplete: evidence was missing
   4    could not run: the source could not be opened or read (no report)
   130  interrupted`

// The exit status of the commands without a verdict.
const (
	captureExitHelp = `EXIT STATUS
   0    the bundle holds all the evidence of the cut
   2    usage or configuration error (an --out kaudit may not write into)
   3    the bundle is incomplete: --max-bytes stopped the copy (run it again to resume), or the source could not give a piece of the cut
   4    could not run: the source could not be read
   130  interrupted`
	showExitHelp = `EXIT STATUS
   0    shown
   2    usage or configuration error
   4    could not run: the source could not be opened or read
   130  interrupted`
	initExitHelp = `EXIT STATUS
   0    the draft is written
   2    usage or configuration error, or the source holds nothing of the app id (the closest one is suggested)
   4    could not run: the source could not be opened or read
   130  interrupted`
)

// helpFlag is urfave/cli's --help flag, but its Apply leaves the flag
// unchanged: the library appends one global HelpFlag to every app and
// command, and its BoolFlag.Apply writes to itself, a data race when two
// apps parse flags at once (the tests run the CLI in parallel).
type helpFlag struct{ *cli.BoolFlag }

func (h helpFlag) Apply(set *flag.FlagSet) error {
	for _, name := range h.Names() {
		set.Bool(name, false, h.Usage)
	}
	return nil
}

func init() {
	cli.HelpFlag = helpFlag{&cli.BoolFlag{Name: "help", Aliases: []string{"h"}, Usage: "show help", DisableDefaultText: true}}
	// the global --version flag races the same way (the app's root command applies it)
	cli.VersionFlag = helpFlag{&cli.BoolFlag{Name: "version", Aliases: []string{"v"}, Usage: "print the version", DisableDefaultText: true}}
	// --version prints what kaudit version prints
	cli.VersionPrinter = func(c *cli.Context) { printVersion(c.App.Writer) }
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop() // never reached (os.Exit): the context ends only by a signal
	go exitAfter(ctx.Done(), signalGrace, os.Stderr, os.Exit)
	os.Exit(run(ctx, os.Args, os.Stdout, os.Stderr))
}

// signalGrace is how long kaudit lets a command end by itself after
// SIGINT or SIGTERM before it exits anyway.
const signalGrace = 700 * time.Millisecond

// exitAfter exits with 130 once grace has passed after interrupted closed,
// should the command not have returned by then: one blocked where no
// cancelled context reaches it (a system call, a library's loop) still
// ends within a second of the signal. An --output is written through a
// temporary file renamed into place, so none is left half-written.
func exitAfter(interrupted <-chan struct{}, grace time.Duration, stderr io.Writer, exit func(int)) {
	<-interrupted
	time.Sleep(grace)
	fmt.Fprintln(stderr, "kaudit: interrupted")
	exit(exitInterrupted)
}

// run runs kaudit with args (args[0] is the program) and returns the exit
// code, having said on stderr what went wrong: the error and, for a usage
// error, a one-line hint.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	args, given := permuteArgs(app, args)
	app.Metadata = map[string]any{cmdlineKey: given, argsKey: args}
	err := unknownFlag(app, args)
	if err == nil {
		err = app.RunContext(ctx, args)
	}
	code := exitCode(ctx, err)
	if err != nil && !isVerdict(err) {
		if msg := err.Error(); strings.HasPrefix(msg, "kaudit ") {
			fmt.Fprintln(stderr, msg) // it names its command already
		} else {
			fmt.Fprintln(stderr, "kaudit:", msg)
		}
		if code == exitUsage {
			fmt.Fprintln(stderr, usageHint(app, args))
		}
	}
	return code
}

// usageHint is the one line after a usage error: where the help is.
func usageHint(app *cli.App, args []string) string {
	if cmd := commandOf(app, args); cmd != "" {
		return fmt.Sprintf("Run 'kaudit %s --help' for usage.", cmd)
	}
	return "Run 'kaudit --help' for usage."
}

func newApp(stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:           "kaudit",
		Usage:          "audit a Kafka Streams application: what was lost, where and why",
		Version:        versionString(),
		Writer:         stdout,
		ErrWriter:      stderr,
		ExitErrHandler: func(*cli.Context, error) {}, // exit codes are decided in exitCode
		OnUsageError:   onUsageError,
		Description:    exitStatusHelp,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return unknownCommand(c.App.Commands, c.Args().First(), "")
			}
			return cli.ShowAppHelp(c)
		},
		Flags: []cli.Flag{
			// urfave/cli adds --help only to an app without a help
			// command; this one has its own (helpCommand)
			cli.HelpFlag,
			&cli.StringFlag{Name: "cpuprofile", Hidden: true, Usage: "write a CPU profile to `FILE`"},
			&cli.StringFlag{Name: "trace", Hidden: true, Usage: "write an execution trace to `FILE` (go tool trace)"},
			&cli.StringFlag{Name: "memprofile", Hidden: true, Usage: "write a heap profile at the end to `FILE`"},
		},
		Before: startProfiles,
		After:  stopProfiles,
		Commands: []*cli.Command{
			diffCommand(),
			captureCommand(),
			ledgerCommand(),
			topologyCommand(),
			txnsCommand(),
			initCommand(),
			specCommand(),
			demoCommand(),
			mergeCommand(),
			versionCommand(),
			helpCommand(),
		},
		// urfave/cli's own help command is one global value that every
		// app and command writes to as it runs, a data race when two run
		// at once (the tests do): each app gets its own (helpCommand)
		HideHelpCommand: true,
	}
	conventions("kaudit", app.Commands)
	return app
}

// helpCommand is `kaudit help [COMMAND]`, made anew for every app.
func helpCommand() *cli.Command {
	return &cli.Command{
		Name:      "help",
		Aliases:   []string{"h"},
		Usage:     "show the commands, or one command's help",
		ArgsUsage: "[COMMAND]",
		Action: func(c *cli.Context) error {
			args := c.Args().Slice()
			if len(args) == 0 {
				return cli.ShowAppHelp(c)
			}
			cmd := c.App.Command(args[0])
			if cmd == nil {
				return unknownCommand(c.App.Commands, args[0], "")
			}
			if len(cmd.Subcommands) == 0 {
				return cli.ShowCommandHelp(c, args[0])
			}
			// a command of commands (spec): its help lists them; help spec
			// check is that command's
			path := []string{c.App.Name, cmd.Name}
			if len(args) > 1 {
				sub := lookupCommand(cmd.Subcommands, args[1])
				if sub == nil {
					return unknownCommand(cmd.Subcommands, args[1], cmd.Name+" ")
				}
				path = append(path, sub.Name)
			}
			return c.App.RunContext(c.Context, append(path, "--help"))
		},
	}
}

// unknownCommand is the usage error of a command kaudit does not have,
// with the closest one it has when there is one near enough.
func unknownCommand(cmds []*cli.Command, name, parent string) error {
	var names []string
	for _, c := range cmds {
		if !c.Hidden {
			names = append(names, c.Names()...)
		}
	}
	if s := closest(name, names); s != "" {
		return usagef("unknown command %q: did you mean %q?", parent+name, parent+s)
	}
	return usagef("unknown command %q", parent+name)
}

// closest is the candidate nearest to s, when it is near enough to be
// what was meant (a typo): a Jaro-Winkler similarity of 0.85 or more.
func closest(s string, candidates []string) string {
	best, score := "", 0.0
	for _, c := range candidates {
		if d := smetrics.JaroWinkler(strings.ToLower(s), strings.ToLower(c), 0.7, 4); d > score {
			best, score = c, d
		}
	}
	if score < 0.85 {
		return ""
	}
	return best
}

// onUsageError makes a bad flag a usage error, printed once by run
// instead of urfave/cli's "Incorrect Usage" and the whole help.
func onUsageError(_ *cli.Context, err error, _ bool) error { return usageError{Err: err} }

// conventions gives every command the same usage errors and refuses
// stray arguments where a command takes none (one without ArgsUsage).
func conventions(parent string, cmds []*cli.Command) {
	for _, cmd := range cmds {
		cmd.OnUsageError = onUsageError
		cmd.HideHelpCommand = true // --help works; the global help subcommand races (see newApp)
		conventions(parent+" "+cmd.Name, cmd.Subcommands)
		if cmd.Action == nil || cmd.ArgsUsage != "" || cmd.Name == "help" {
			continue
		}
		action, name := cmd.Action, parent+" "+cmd.Name
		cmd.Action = func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("%s takes no arguments, got %q", name, c.Args().Slice())
			}
			return action(c)
		}
	}
}

// verdictError carries a run's verdict out of a command so that exitCode
// can map it; it prints nothing of its own.
type verdictError struct{ verdict audit.Verdict }

func (e verdictError) Error() string { return "verdict " + string(e.verdict) }

func isVerdict(err error) bool {
	var v verdictError
	return errors.As(err, &v)
}

// verdictResult turns a verdict into the command's error: nil when clean.
func verdictResult(v audit.Verdict) error {
	if v == audit.VerdictClean {
		return nil
	}
	return verdictError{v}
}

// usageError is a usage or configuration error (exit 2): the library's
// audit.UsageError, also for what the CLI's own flags get wrong.
type usageError = audit.UsageError

func usagef(format string, args ...any) error { return usageError{Err: fmt.Errorf(format, args...)} }

// incompleteError is a run that stopped with its evidence incomplete
// (exit 3) without a report to say so: a capture cut by --max-bytes.
type incompleteError struct{ err error }

func (e incompleteError) Error() string { return e.err.Error() }
func (e incompleteError) Unwrap() error { return e.err }

// notRunError is an audit that could not run (exit 4), so there is no
// report: an unreachable cluster, refused credentials, a snapshot or log
// dir that cannot be opened, a read that failed midway (audit.NotRunError).
type notRunError = audit.NotRunError

// isNotRun reports whether err says the audit could not run.
func isNotRun(err error) bool {
	var nr notRunError
	return errors.As(err, &nr)
}

func exitCode(ctx context.Context, err error) int {
	if err == nil {
		return exitClean
	}
	var (
		v  verdictError
		u  usageError
		in incompleteError
		nr notRunError
	)
	switch {
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		return exitInterrupted
	case errors.As(err, &v):
		switch v.verdict {
		case audit.VerdictLoss, audit.VerdictAnomaly:
			return exitFindings
		case audit.VerdictIncomplete:
			return exitIncomplete
		}
		return exitClean
	case errors.As(err, &u):
		return exitUsage
	case errors.As(err, &in):
		return exitIncomplete
	case errors.As(err, &nr):
		return exitNotRun
	}
	// urfave/cli reports bad flags and unknown commands as plain errors.
	return exitUsage
}

// startProfiles and stopProfiles serve the hidden --cpuprofile,
// --memprofile and --trace flags (the bench harness uses them).
func startProfiles(c *cli.Context) error {
	if path := c.String("cpuprofile"); path != "" {
		f, err := createProfile(path)
		if err != nil {
			return usagef("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return usagef("--cpuprofile: %w", err)
		}
	}
	if path := c.String("memprofile"); path != "" {
		if err := dest.Check([]dest.Path{{Path: path}}, nil); err != nil {
			return usagef("--memprofile: %w", err) // before the work, not after it
		}
	}
	if path := c.String("trace"); path != "" {
		f, err := createProfile(path)
		if err != nil {
			return usagef("--trace: %w", err)
		}
		if err := trace.Start(f); err != nil {
			f.Close()
			return usagef("--trace: %w", err)
		}
	}
	return nil
}

func stopProfiles(c *cli.Context) error {
	if c.String("cpuprofile") != "" {
		pprof.StopCPUProfile()
	}
	if c.String("trace") != "" {
		trace.Stop()
	}
	if path := c.String("memprofile"); path != "" {
		f, err := createProfile(path)
		if err != nil {
			return usagef("--memprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			return fmt.Errorf("write --memprofile: %w", err)
		}
	}
	return nil
}

// createProfile creates a hidden profile flag's file by kaudit's write
// rule: a new file (they are written as they go, not renamed into place),
// never through a symlink. They are set before the command's flags are
// read, so the command's inputs are not known to check them against.
func createProfile(path string) (*os.File, error) {
	if err := dest.Check([]dest.Path{{Path: path}}, nil); err != nil {
		return nil, err
	}
	return dest.Create(path)
}
