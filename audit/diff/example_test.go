package diff_test

import (
	"context"
	"fmt"
	"log"
	"path/filepath"

	"github.com/kaudit/kaudit/audit/diff"
)

// ExampleDiff audits the incident bundle kept under testdata (a capture of
// the drill's dropped scenario: the app swallowed the six records of five
// orderIds before selectKey) with its spec, and prints the verdict and the
// findings that change it.
func ExampleDiff() {
	ctx := context.Background()
	root := filepath.Join("..", "..", "testdata", "incidents")
	ev, err := diff.OpenSnapshot(ctx, filepath.Join(root, "dropped"))
	if err != nil {
		log.Fatal(err)
	}
	rep, err := diff.Diff(ctx, ev, diff.Options{SpecFile: filepath.Join(root, "dropped.kaudit.yaml")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("verdict:", rep.Summary.Verdict)
	n := map[string]int{}
	for _, f := range rep.Findings {
		if f.Severity == "loss" || f.Severity == "anomaly" {
			n[fmt.Sprintf("%s/%s/%s", f.Severity, f.Stage, f.Cause)]++
		}
	}
	fmt.Println(n)
	// Output:
	// verdict: loss
	// map[loss/repartition/dropped:6]
}
