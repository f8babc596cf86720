package main

import (
	"fmt"
	"io"
	"net/url"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/kaudit/kaudit/audit"
)

// cmdlineKey is the app metadata holding the names of the flags given on
// the command line (as opposed to from KAUDIT_* variables).
const cmdlineKey = "kaudit.cmdline"

// argsKey is the app metadata holding the command line, for the report's
// provenance (redacted there).
const argsKey = "kaudit.args"

// provenanceArgs is the command line kaudit runs with, if known.
func provenanceArgs(c *cli.Context) []string {
	a, _ := c.App.Metadata[argsKey].([]string)
	return a
}

// permuteArgs moves a command's flags before its arguments, so that
// flags may follow them (kaudit merge a.json b.json --format md) although
// urfave/cli stops parsing flags at the first argument. It returns the
// new args and the names of the command's flags the command line gives.
// Arguments after "--" stay arguments.
func permuteArgs(app *cli.App, args []string) ([]string, map[string]bool) {
	given := map[string]bool{}
	cmd, i := findCommand(app, args)
	if cmd == nil {
		return args, given
	}
	start := i
	var flags, rest []string
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			rest = append(rest, a)
			continue
		}
		flags = append(flags, a)
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := lookupFlag(cmd.Flags, name)
		if f == nil {
			continue // urfave/cli reports it
		}
		given[f.Names()[0]] = true
		if !hasValue && takesValue(f) && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	out := append([]string{}, args[:start]...)
	out = append(out, flags...)
	if len(rest) > 0 {
		out = append(out, "--")
		out = append(out, rest...)
	}
	return out, given
}

// unknownFlag is the usage error of the first flag args give that their
// command does not have, with the closest one it has (a typo, or another
// tool's spelling: --bootstrap-servers, --group, -t are aliases already);
// nil when every flag is known.
func unknownFlag(app *cli.App, args []string) error {
	cmd, i := findCommand(app, args)
	if cmd == nil {
		return nil
	}
	var names []string
	for _, f := range append(slices.Clone(cmd.Flags), cli.HelpFlag) {
		names = append(names, f.Names()...)
	}
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return nil
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if f := lookupFlag(cmd.Flags, name); f != nil {
			if !hasValue && takesValue(f) {
				i++ // its value, which may start with a dash
			}
			continue
		}
		if slices.Contains(cli.HelpFlag.Names(), name) {
			continue
		}
		dash := func(n string) string {
			if len(n) == 1 {
				return "-" + n
			}
			return "--" + n
		}
		if c := closest(name, names); c != "" {
			return usagef("kaudit %s: unknown flag %s: did you mean %s?", cmd.Name, a, dash(c))
		}
		return usagef("kaudit %s: unknown flag %s", cmd.Name, a)
	}
	return nil
}

// findCommand walks args past the global flags and the command (and
// subcommand) names; it returns the leaf command and the index of its
// first own argument, or nil when args name no command.
func findCommand(app *cli.App, args []string) (*cli.Command, int) {
	i := 1
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "--" {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if f := lookupFlag(app.Flags, name); f != nil && !hasValue && takesValue(f) {
			i++
		}
		i++
	}
	var cmd *cli.Command
	cmds := app.Commands
	for i < len(args) {
		next := lookupCommand(cmds, args[i])
		if next == nil {
			break
		}
		cmd, cmds = next, next.Subcommands
		i++
	}
	if cmd == nil || len(cmd.Subcommands) > 0 {
		return nil, 0
	}
	return cmd, i
}

// commandOf names the command args run ("diff", "spec check"), or "".
func commandOf(app *cli.App, args []string) string {
	var names []string
	cmds := app.Commands
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "-") {
			continue
		}
		c := lookupCommand(cmds, a)
		if c == nil || c.Name == "help" {
			break
		}
		names = append(names, c.Name)
		cmds = c.Subcommands
	}
	return strings.Join(names, " ")
}

func lookupCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

func lookupFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

func takesValue(f cli.Flag) bool {
	if tv, ok := f.(cli.DocGenerationFlag); ok {
		return tv.TakesValue()
	}
	return true
}

// givenOnCommandLine says whether the command line itself (not a KAUDIT_*
// variable) gave the flag.
func givenOnCommandLine(c *cli.Context, name string) bool {
	given, _ := c.App.Metadata[cmdlineKey].(map[string]bool)
	return given[name]
}

// buildInfo is the module version and VCS state the binary was built
// from, as runtime/debug reports them.
type buildInfo struct {
	Version, Commit, Time string
	Modified              bool
	Go                    string
}

// version is the release a build names with -ldflags "-X
// main.version=v1.2.0" (the Dockerfile does): it wins over the module's.
var version string

func readBuildInfo() buildInfo {
	b := buildInfo{Version: "(unknown)", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if version != "" {
			b.Version = version
		}
		return b
	}
	if bi.Main.Version != "" {
		b.Version = bi.Main.Version
	}
	if version != "" {
		b.Version = version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// versionString is the one line of kaudit --version.
func versionString() string {
	b := readBuildInfo()
	v := b.Version
	if b.Commit != "" {
		c := b.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		v += " (commit " + c
		if b.Modified {
			v += ", modified"
		}
		v += ")"
	}
	return v
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print kaudit's version and the commit it was built from",
		Action: func(c *cli.Context) error {
			printVersion(c.App.Writer)
			return nil
		},
	}
}

// printVersion is what kaudit version and kaudit --version print: the
// version, the commit and its time, the Go it was built with.
func printVersion(w io.Writer) {
	b := readBuildInfo()
	fmt.Fprintf(w, "kaudit %s\n", b.Version)
	if b.Commit != "" {
		dirty := ""
		if b.Modified {
			dirty = " (modified)"
		}
		fmt.Fprintf(w, "commit %s%s\n", b.Commit, dirty)
	}
	if b.Time != "" {
		fmt.Fprintf(w, "commit time %s\n", b.Time)
	}
	fmt.Fprintf(w, "built with %s\n", b.Go)
}

// redactedArgs is the command line with secrets replaced by
// audit.Redacted: the values of secret --command-property keys and the
// user info of URLs. Flags take their values either as --flag=v or as
// the next argument.
func redactedArgs(args []string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		name, v, inline := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			continue
		}
		if !inline && i+1 < len(out) {
			v = out[i+1]
		}
		r := redactValue(name, v)
		switch {
		case r == v:
		case inline:
			out[i] = a[:len(a)-len(v)] + r
		case i+1 < len(out):
			out[i+1] = r
		}
	}
	return out
}

func redactValue(flag, v string) string {
	if flag == "command-property" {
		if k, _, ok := strings.Cut(v, "="); ok && audit.IsSecretKey(k) {
			return k + "=" + audit.Redacted
		}
		return v
	}
	if u, err := url.Parse(v); err == nil && u.User != nil && u.Scheme != "" {
		u.User = nil
		return strings.Replace(u.String(), "://", "://"+audit.Redacted+"@", 1)
	}
	return v
}

// commandLine is the redacted command line as one shell-quoted string.
func commandLine(args []string) string {
	q := make([]string, 0, len(args))
	for _, a := range redactedArgs(args) {
		if a != "" && !strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
			q = append(q, a)
			continue
		}
		q = append(q, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
	}
	return strings.Join(q, " ")
}
