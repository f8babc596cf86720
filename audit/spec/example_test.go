package spec_test

import (
	"encoding/json"
	"fmt"

	"github.com/kaudit/kaudit/audit/spec"
)

// A table's select_key and reducer, then a join's value expression.
func ExampleParseSpec() {
	s, err := spec.ParseSpec("kaudit.yaml", []byte(`
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
	pay := s.Table("payments")
	agg, _ := pay.Reduce(nil, map[string]any{"orderId": "o1", "amount": json.Number("10")}, true)
	agg, _ = pay.Reduce(agg, map[string]any{"orderId": "o1", "amount": json.Number("2.5")}, false)
	key, _ := pay.SelectKey(spec.RecordEnv{Value: agg})
	out, _ := s.Joins[0].Eval(map[string]any{"orderId": "o1"}, []any{agg})
	b, _ := json.Marshal(out)
	fmt.Println(key, string(b))
	// Output:
	// o1 {"id":"o1","paid":12.5}
}
