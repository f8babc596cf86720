package topology_test

import (
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
