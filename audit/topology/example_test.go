package topology_test

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/kaudit/kaudit/audit/topology"
)

// Parse the describe() text of the seed app and list each store with the
// source topic that feeds it and its changelog.
func ExampleParse() {
	f, err := os.Open("../../testdata/kafka/describe/out/3.6/seed.txt")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	topo, err := topology.Parse(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	lay := topo.Layout("orders-app")
	for _, s := range lay.Stores {
		fmt.Println(s.Sources, "→", s.Changelog)
	}
	for _, j := range lay.Joins {
		fmt.Println(j.Node, "then", j.Next, "outputs", j.Outputs)
	}
	// Output:
	// [orders-v1] → orders-app-KSTREAM-REDUCE-STATE-STORE-0000000002-changelog
	// [payments-v1] → orders-app-KSTREAM-REDUCE-STATE-STORE-0000000009-changelog
	// [shipments-v1] → orders-app-KSTREAM-REDUCE-STATE-STORE-0000000016-changelog
	// KTABLE-MERGE-0000000021 then KTABLE-MERGE-0000000024 outputs [order-status]
	// KTABLE-MERGE-0000000024 then  outputs [order-status]
}

// A table's select_key and reducer, then a join's value expression.
func ExampleParseSpec() {
	spec, err := topology.ParseSpec("kaudit.yaml", []byte(`
app_id: orders-app
tables:
  - {name: orders, source: orders-v1, select_key: value.orderId, reduce: latest, store: orders-store}
  - {name: payments, source: payments-v1, select_key: value.orderId, reduce: sum(amount), store: payments-store}
joins:
  - {output: order-status, left: orders, right: [payments], value: '{"id": left.orderId, "paid": r1?.amount}'}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	pay := spec.Table("payments")
	agg, _ := pay.Reduce(nil, map[string]any{"orderId": "o1", "amount": json.Number("10")}, true)
	agg, _ = pay.Reduce(agg, map[string]any{"orderId": "o1", "amount": json.Number("2.5")}, false)
	key, _ := pay.SelectKey(topology.RecordEnv{Value: agg})
	out, _ := spec.Joins[0].Eval(map[string]any{"orderId": "o1"}, []any{agg})
	b, _ := json.Marshal(out)
	fmt.Println(key, string(b))
	// Output:
	// o1 {"id":"o1","paid":12.5}
}
