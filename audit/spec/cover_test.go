package spec

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestUncovered: what a spec does not describe of the topology is named,
// with the nodes on the way kaudit does not model; a spec that describes
// everything leaves nothing uncovered.
func TestUncovered(t *testing.T) {
	cases := []struct {
		name, topology, spec string
		want                 []string // each a substring of one message
	}{
		{
			name:     "foreign-key join",
			topology: "fk-join.txt",
			spec: `app_id: app
serdes: {key: string, value: json}
tables:
  - {name: orders, source: orders, reduce: latest}
  - {name: customers, source: customers, reduce: latest}
`,
			want: []string{"output enriched-orders (written by KSTREAM-SINK-0000000021) is not judged", "KTABLE-FK-JOIN-OUTPUT-0000000018 (a foreign-key join)"},
		},
		{
			name:     "stream-table join, the table only",
			topology: "stream-table-join.txt",
			spec: `app_id: app
tables:
  - {name: products, source: products, reduce: latest}
`,
			want: []string{"output sales-enriched", "KSTREAM-LEFTJOIN-0000000008 (a stream-table join)"},
		},
		{
			name:     "a table left out",
			topology: "seed.txt",
			spec: `app_id: app
tables:
  - {name: orders, source: orders-v1, select_key: value.orderId, reduce: latest}
`,
			want: []string{"store KSTREAM-REDUCE-STATE-STORE-0000000009 (written by KSTREAM-REDUCE-0000000010) is not judged: no table of the spec folds it",
				"output order-status"},
		},
		{
			name:     "the whole seed",
			topology: "seed.txt",
			spec: `app_id: app
tables:
  - {name: orders, source: orders-v1, select_key: value.orderId, reduce: latest}
  - {name: payments, source: payments-v1, select_key: value.orderId, reduce: sum(amount)}
  - {name: shipments, source: shipments-v1, select_key: value.orderId, reduce: latest}
joins:
  - {output: order-status, left: orders, right: [payments, shipments]}
`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sp, err := ParseSpec("kaudit.yaml", []byte(c.spec))
			if err != nil {
				t.Fatal(err)
			}
			p, err := Resolve(sp, parseFile(t, filepath.Join(describeDir, "3.6", c.topology)), "")
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(p.Uncovered, "\n")
			if len(c.want) == 0 && got != "" {
				t.Errorf("uncovered:\n%s", got)
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("uncovered lacks %q:\n%s", w, got)
				}
			}
		})
	}
}

// TestStreamJoinResolve: a stream join resolves to the topology's join
// node, its repartition topic (the selectKey's) and nothing uncovered;
// steps that differ from the chain leave it unjudged, naming the node.
func TestStreamJoinResolve(t *testing.T) {
	topo := parseFile(t, filepath.Join(describeDir, "3.6", "stream-table-join.txt"))
	for _, c := range []struct {
		name, steps, unjudged string
	}{
		{name: "the chain", steps: "[selectKey: value.product]"},
		{name: "a step too many", steps: "[filter: 'value.qty > 0', selectKey: value.product]", unjudged: "has no node in the topology"},
		{name: "the selectKey left out", steps: "[]", unjudged: "KSTREAM-KEY-SELECT-0000000004"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sp, err := ParseSpec("kaudit.yaml", []byte(`app_id: app
tables:
  - {name: products, source: products, reduce: table}
stream_joins:
  - {output: sales-enriched, stream: sales, steps: `+c.steps+`, table: products, value: '{"sale": stream, "product": table}'}
`))
			if err != nil {
				t.Fatal(err)
			}
			p, err := Resolve(sp, topo, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Uncovered) > 0 {
				t.Errorf("uncovered: %v", p.Uncovered)
			}
			j := p.StreamJoins[0]
			if j.Node != "KSTREAM-LEFTJOIN-0000000008" || j.Repartition != "app-KSTREAM-KEY-SELECT-0000000004-repartition" {
				t.Errorf("node %s, repartition %s", j.Node, j.Repartition)
			}
			switch {
			case c.unjudged == "" && j.Unjudged != "":
				t.Errorf("unjudged: %s", j.Unjudged)
			case c.unjudged != "" && !strings.Contains(j.Unjudged, c.unjudged):
				t.Errorf("unjudged %q, want it to say %q", j.Unjudged, c.unjudged)
			}
		})
	}
}
