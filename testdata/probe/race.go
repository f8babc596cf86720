package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

type raceResult struct{ pkg, status string }

// racePkgs are the packages whose parsers the probe drives, whose race
// tests are bounded (cmd/kaudit's take minutes on 2 cores: -race-pkgs adds it).
var racePkgs = "./audit/segment,./audit/snapshot,./audit/codec/..."

// runRace runs go test -race on racePkgs, each bounded by 4 minutes.
func runRace(root string, logf func(string, ...any)) []raceResult {
	var rs []raceResult
	for _, p := range strings.Split(racePkgs, ",") {
		logf("go test -race %s", p)
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		start := time.Now()
		cmd := exec.CommandContext(ctx, "go", "test", "-race", "-count=1", p)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		st := fmt.Sprintf("ok (%s)", time.Since(start).Round(time.Second))
		switch {
		case timedOut:
			st = "not finished in 4m"
		case strings.Contains(string(out), "WARNING: DATA RACE"):
			st = fmt.Sprintf("DATA RACE (%d reports)", strings.Count(string(out), "WARNING: DATA RACE"))
		case err != nil:
			st = "FAIL: " + trim(lastLines(string(out), 3), 200)
		}
		rs = append(rs, raceResult{p, st})
	}
	return rs
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(ls[max(0, len(ls)-n):], " | ")
}

func printRace(rs []raceResult) {
	fmt.Println("## 5. Races")
	fmt.Println()
	fmt.Println("| go test -race -count=1 | result |")
	fmt.Println("|---|---|")
	for _, r := range rs {
		fmt.Printf("| %s | %s |\n", r.pkg, r.status)
	}
	fmt.Println()
}
