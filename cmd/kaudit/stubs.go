package main

import "github.com/urfave/cli/v2"

// notBuilt is the action of a command that does not exist yet: it says so
// and exits 2, never printing a fake result.
func notBuilt(name string) cli.ActionFunc {
	return func(*cli.Context) error { return errNotBuilt(name) }
}




func mergeCommand() *cli.Command {
	return &cli.Command{Name: "merge", Usage: "merge shard reports of one app into one", Action: notBuilt("merge")}
}
