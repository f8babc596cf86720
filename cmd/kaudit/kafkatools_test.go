package main

import (
	"encoding/csv"
	"strings"
	"testing"
	"time"
)

// TestKafkaToolConventions: on the bundled incident, through the built
// binary, kaudit takes the spellings of Kafka's own tools and answers as
// they do (issue AG, item 10): -b, --bootstrap-servers, --group and -t are
// its flags' aliases, a flag it does not have is a usage error with the
// closest it has; the ledger, piped, prints aligned lines with every
// cell whole, counts "committed offsets" (the cut's "committed offset" is
// the group's), and decodes the listed records with the bundle's schemas;
// the cut has a lag column; the CSV's times are ISO as the postmortem's;
// --version prints what version prints.
func TestKafkaToolConventions(t *testing.T) {
	const bundle = "../../testdata/incidents/dropped"
	for _, c := range []struct {
		name   string
		args   []string
		exit   int
		want   []string // on stdout, or on stderr for a usage error
		absent []string
	}{
		{"--group", []string{"diff", "--snapshot", bundle, "--group", "kaudit-drill", "--min-severity", "loss"}, exitFindings, []string{"LOSS: 6 records vanished"}, nil},
		{"-b", []string{"ledger", "-b", closedPort(t), "-t", "orders", "--timeout", "1s"}, exitNotRun, []string{"reach bootstrap servers"}, []string{"unknown flag"}},
		{"--bootstrap-servers", []string{"txns", "--bootstrap-servers", closedPort(t), "--group", "kaudit-drill", "--timeout", "1s"}, exitNotRun, []string{"reach bootstrap servers"}, []string{"unknown flag"}},
		{"a typo", []string{"diff", "--snapshott", bundle, "--app-id", "kaudit-drill"}, exitUsage, []string{"unknown flag --snapshott: did you mean --snapshot?"}, nil},
		{"another tool's flag", []string{"ledger", "--snapshot", bundle, "-t", "orders", "--partitions", "0"}, exitUsage, []string{"did you mean --partition?"}, nil},
		{"ledger piped", []string{"ledger", "--snapshot", bundle, "-t", "orders", "--partition", "0", "--offsets", "23-23"}, exitClean,
			[]string{"COMMITTED OFFSETS", `"o-w1-0042"`, `{"amount":8637,"customer":"c-159","orderId":"o-w1-0042","seq":42,"status":"NEW"}`}, []string{"│", "┌", "b64:"}},
		{"the cut's lag", []string{"diff", "--snapshot", bundle, "--app-id", "kaudit-drill", "--format", "md"}, exitFindings,
			[]string{"| lag (HW − committed) |", "| orders | source | 0 | 201 | 0 | 201 | 201 | 0 |"}, []string{"| committed (require_stable) |"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := runBin(t, "", nil, c.args...)
			if code != c.exit {
				t.Fatalf("exit %d, want %d: %s", code, c.exit, lastLinesOf(errOut, 5))
			}
			got := out + errOut
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("no %q in\n%s", w, got)
				}
			}
			for _, a := range c.absent {
				if strings.Contains(got, a) {
					t.Errorf("%q in\n%s", a, got)
				}
			}
		})
	}
	t.Run("CSV times", func(t *testing.T) {
		out, _, _ := runBin(t, "", nil, "diff", "--snapshot", bundle, "--app-id", "kaudit-drill", "--format", "csv")
		rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
		if err != nil || len(rows) < 2 || rows[0][8] != "timestamp" {
			t.Fatalf("%v: %q", err, rows)
		}
		n := 0
		for _, r := range rows[1:] {
			if r[8] == "" {
				continue
			}
			if _, err := time.Parse("2006-01-02T15:04:05.000Z07:00", r[8]); err != nil || !strings.HasSuffix(r[8], "Z") {
				t.Errorf("timestamp %q: want ISO 8601 in UTC, as the postmortem's", r[8])
			}
			n++
		}
		if n == 0 {
			t.Error("no timestamp")
		}
	})
	t.Run("--version", func(t *testing.T) {
		a, _, _ := runBin(t, "", nil, "version")
		b, _, _ := runBin(t, "", nil, "--version")
		if a != b || !strings.HasPrefix(a, "kaudit ") {
			t.Errorf("kaudit version prints\n%s\nkaudit --version\n%s", a, b)
		}
	})
}
