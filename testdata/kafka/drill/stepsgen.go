package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
)

// Input and folds of the apps-* scenarios (steps.go): each app's records and the drill's own
// fold of them, computed the way StepsApps.java does, to check the apps' outputs independently
// of kaudit.

// Tags of records the drill made for a reason.
const (
	tagTest       = "test"        // an order with status TEST: the orders app's filter drops it
	tagTestUpdate = "test-update" // an order's update with status TEST: dropped, the table keeps the earlier version
	tagLate       = "late"        // a click for a window long closed: Streams skips it
	tagSwallowed  = "swallowed"   // a line the words app swallows (-Ddrop.keys)
)

// genOrdersApp is the orders app's input: the drill's wave (genWave) on the so-* topics, with
// every tenth order a TEST order and every fifth update a TEST update.
func genOrdersApp(wave, n int) []*inputRec {
	recs := genWave(waveSpec{wave: wave, orders: n, updates: true, payments: true, shipments: true, nullKeys: 2})
	topics := map[string]string{topicOrders: "so-orders", topicPayments: "so-payments", topicShipments: "so-shipments"}
	for _, r := range recs {
		r.App, r.Topic = "orders", topics[r.Topic]
		if r.Topic != "so-orders" {
			continue
		}
		var i int
		fmt.Sscanf((*r.OrderID)[len(fmt.Sprintf("o-w%d-", wave)):], "%d", &i)
		update := r.Value["status"] == "CONFIRMED"
		switch {
		case !update && i%10 == 3:
			r.Value["status"], r.Tag = "TEST", tagTest
		case update && i%15 == 6:
			r.Value["status"], r.Tag = "TEST", tagTestUpdate
		}
	}
	return recs
}

// ordersAppOutput folds the orders app's records: TEST versions filtered, payments in cents.
func ordersAppOutput(recs []*inputRec, skip func(*inputRec) bool) map[string]map[string]any {
	var plain []*inputRec
	topics := map[string]string{"so-orders": topicOrders, "so-payments": topicPayments, "so-shipments": topicShipments}
	for _, r := range recs {
		if r.App != "orders" || r.Value["status"] == "TEST" || (skip != nil && skip(r)) {
			continue
		}
		c := *r
		c.Topic = topics[r.Topic]
		if c.Topic == topicPayments {
			v := map[string]any{}
			for k, x := range r.Value {
				v[k] = x
			}
			v["amount"] = r.Value["amount"].(int64) * 100
			c.Value = v
		}
		plain = append(plain, &c)
	}
	return expectedOutput(plain, nil)
}

var vocabulary = strings.Fields(`kafka stream table topic record offset commit broker partition
	replica leader epoch window store changelog state task thread group member fence abort
	batch segment index filter map branch merge count reduce join key value`)

// genWordsApp is the words app's input: n lines of 3-8 words, the first capitalized, each with
// its own timestamp (1 ms apart, so that a copy's timestamp names its line) and a header.
func genWordsApp(wave, n int) []*inputRec {
	rng := rand.New(rand.NewPCG(20261202, uint64(wave)))
	base := time.Now().Add(-time.Hour).UnixMilli()
	var out []*inputRec
	for i := range n {
		words := make([]string, 3+rng.IntN(6))
		for j := range words {
			words[j] = vocabulary[rng.IntN(len(vocabulary))]
		}
		words[0] = strings.ToUpper(words[0][:1]) + words[0][1:]
		key := fmt.Sprintf("l-w%d-%04d", wave, i)
		out = append(out, &inputRec{App: "words", Topic: "sw-lines", Key: key, Wave: wave, Timestamp: base + int64(i),
			Header: key, Value: map[string]any{"line": strings.Join(words, " ")}})
	}
	return out
}

// lineWords is what the words app's flatMapValues makes of a line.
func lineWords(r *inputRec) []string {
	return strings.Split(strings.ToLower(r.Value["line"].(string)), " ")
}

// wordsAppOutput counts the words of the lines not skipped.
func wordsAppOutput(recs []*inputRec, skip func(*inputRec) bool) map[string]int64 {
	out := map[string]int64{}
	for _, r := range recs {
		if r.App != "words" || (skip != nil && skip(r)) {
			continue
		}
		for _, w := range lineWords(r) {
			out[w]++
		}
	}
	return out
}

const (
	clickWindow    = int64(60_000) // TimeWindows.ofSizeAndGrace(1 min, 5 s)
	clickGrace     = int64(5_000)
	busyThreshold  = int64(3) // filter((wk, n) -> n > 3)
	clickUsers     = 12
	clickLateCount = 3
)

// genWindowsApp is the windows app's input: n clicks over about n*2 s of event time starting
// 15 minutes ago (on a minute), keyed by user, three users busier than the rest; then
// clickLateCount clicks for the first minute, produced last: late by many windows.
func genWindowsApp(wave, n int) (clicks, late []*inputRec) {
	rng := rand.New(rand.NewPCG(20261203, uint64(wave)))
	t0 := time.Now().Add(-15 * time.Minute).Truncate(time.Minute).UnixMilli()
	for i := range n {
		u := rng.IntN(clickUsers)
		if rng.IntN(2) == 0 {
			u = rng.IntN(3)
		}
		user := fmt.Sprintf("u-%02d", u)
		ts := t0 + int64(i)*2000 + int64(rng.IntN(1500))
		clicks = append(clicks, &inputRec{App: "windows", Topic: "sc-clicks", Key: user, OrderID: &user, Wave: wave, Timestamp: ts,
			Value: map[string]any{"user": user, "page": fmt.Sprintf("/p/%d", rng.IntN(20))}})
	}
	for i := range clickLateCount {
		user := fmt.Sprintf("u-%02d", i)
		late = append(late, &inputRec{App: "windows", Topic: "sc-clicks", Key: user, OrderID: &user, Wave: wave, Timestamp: t0 + 10_000 + int64(i),
			Tag: tagLate, Value: map[string]any{"user": user, "page": "/late"}})
	}
	return clicks, late
}

// windowKey is one window of one user.
type windowKey struct {
	user  string
	start int64
}

// windowsAppCounts counts the clicks per user and minute, without those skip removes.
func windowsAppCounts(recs []*inputRec, skip func(*inputRec) bool) map[windowKey]int64 {
	out := map[windowKey]int64{}
	for _, r := range recs {
		if r.App != "windows" || (skip != nil && skip(r)) {
			continue
		}
		out[windowKey{r.Key, r.Timestamp - r.Timestamp%clickWindow}]++
	}
	return out
}

// genRoutesApp is the routes app's input: n orders, each on one channel (sr-web or sr-mobile,
// keyed by orderId), amounts in the three branches (>= 100, < 10, the rest); every seventh
// order updated later on its channel with a new amount, which may take another branch.
func genRoutesApp(wave, n int) []*inputRec {
	rng := rand.New(rand.NewPCG(20261204, uint64(wave)))
	amount := func() int64 {
		switch r := rng.Float64(); {
		case r < 0.3:
			return 100 + int64(rng.IntN(400))
		case r < 0.5:
			return 1 + int64(rng.IntN(9))
		default:
			return 10 + int64(rng.IntN(90))
		}
	}
	var out, updates []*inputRec
	for i := range n {
		oid := fmt.Sprintf("r-w%d-%04d", wave, i)
		ch := []string{"web", "mobile"}[rng.IntN(2)]
		cust := fmt.Sprintf("c-%02d", rng.IntN(30))
		rec := func() *inputRec {
			return &inputRec{App: "routes", Topic: "sr-" + ch, Key: oid, OrderID: &oid, Wave: wave,
				Value: map[string]any{"orderId": oid, "customer": cust, "amount": amount(), "channel": ch}}
		}
		out = append(out, rec())
		if i%7 == 0 {
			updates = append(updates, rec())
		}
	}
	return append(out, updates...)
}

// routesAppFolds folds the routes app's records as its three branches do: the count of big
// orders per customer, the latest small version per orderId, the sum of the rest per customer.
func routesAppFolds(recs []*inputRec, skip func(*inputRec) bool) (big map[string]int64, small map[string]map[string]any, rest map[string]int64) {
	big, small, rest = map[string]int64{}, map[string]map[string]any{}, map[string]int64{}
	for _, r := range recs {
		if r.App != "routes" || (skip != nil && skip(r)) {
			continue
		}
		a, c := r.Value["amount"].(int64), r.Value["customer"].(string)
		switch {
		case a >= 100:
			big[c]++
		case a < 10:
			small[r.Key] = r.Value
		default:
			rest[c] += a
		}
	}
	return big, small, rest
}

// encodeValue is a record's value as its app writes it (orders: Confluent Avro; words: the
// line as text; windows, routes and the z-apps: JSON); a nil Value is a tombstone (the z-apps'
// tables).
func (d *drill) encodeValue(r *inputRec, ids map[string]int) ([]byte, error) {
	if r.Value == nil {
		return nil, nil
	}
	switch r.App {
	case "orders":
		name := map[string]string{"so-orders": "Order", "so-payments": "Payment", "so-shipments": "Shipment"}[r.Topic]
		if _, ok := ids[r.Topic]; !ok {
			id, err := d.schemas.register(d.regURL, r.Topic+"-value", name)
			if err != nil {
				return nil, err
			}
			ids[r.Topic] = id
		}
		return d.schemas.encode(ids[r.Topic], name, r.Value)
	case "words":
		return []byte(r.Value["line"].(string)), nil
	default:
		return json.Marshal(r.Value)
	}
}

// decodeLong reads a Kafka LongSerializer value.
func decodeLong(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("a Long is 8 bytes, not %d", len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// decodeWindowed reads a key of WindowedSerdes.timeWindowedSerdeFrom(String.class, …): the
// key's bytes, then the window start (8 bytes big-endian).
func decodeWindowed(b []byte) (windowKey, error) {
	if len(b) < 8 {
		return windowKey{}, fmt.Errorf("a windowed key is at least 8 bytes, not %d", len(b))
	}
	return windowKey{string(b[:len(b)-8]), int64(binary.BigEndian.Uint64(b[len(b)-8:]))}, nil
}

// sortedRecIDs names records as topic/partition@offset, sorted.
func sortedRecIDs(recs []*inputRec) []string {
	var out []string
	for _, r := range recs {
		out = append(out, recordID(r.Topic, r.Partition, r.Offset))
	}
	sort.Strings(out)
	return out
}
