package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// inputRec is one record the drill produced, with where it landed: the ground truth.
type inputRec struct {
	Topic     string         `json:"topic"`
	Partition int32          `json:"partition"`
	Offset    int64          `json:"offset"`
	Key       string         `json:"key"`
	OrderID   *string        `json:"order_id"` // the selected key; nil for a null-key payment
	Wave      int            `json:"wave"`
	Value     map[string]any `json:"value"`
	// The apps-* scenarios (steps.go): the app the record is for, its producer timestamp (ms;
	// 0: the client's clock), a header, and what the drill made it for ("test", "late", …).
	App       string `json:"app,omitempty"`
	Timestamp int64  `json:"timestamp,omitempty"`
	Header    string `json:"header,omitempty"`
	Tag       string `json:"tag,omitempty"`
}

// waveSpec says what one wave of input holds.
type waveSpec struct {
	wave      int
	orders    int  // distinct orderIds
	updates   bool // every third order gets a second version later in the stream
	payments  bool
	shipments bool
	nullKeys  int // payments with a null orderId (Streams drops them by design)
}

var carriers = []string{"dhl", "ups", "fedex", "post"}

// genWave builds a wave deterministically from its spec: same spec, same records, same order.
// Orders are keyed by orderId (so all versions of one order share a partition and keep their
// order); payments and shipments are keyed by their own id, so selectKey really re-keys them.
func genWave(ws waveSpec) []*inputRec {
	rng := rand.New(rand.NewPCG(20261130, uint64(ws.wave)))
	var orders, updates, pays, ships []*inputRec
	str := func(s string) *string { return &s }
	payN, shipN := 0, 0
	for i := range ws.orders {
		oid := fmt.Sprintf("o-w%d-%04d", ws.wave, i)
		cust := fmt.Sprintf("c-%03d", rng.IntN(200))
		amt := int64(100 + rng.IntN(9900))
		orders = append(orders, &inputRec{Topic: topicOrders, Key: oid, OrderID: str(oid), Wave: ws.wave,
			Value: map[string]any{"orderId": oid, "customer": cust, "amount": amt, "status": "NEW", "seq": int64(i)}})
		if ws.updates && i%3 == 0 {
			updates = append(updates, &inputRec{Topic: topicOrders, Key: oid, OrderID: str(oid), Wave: ws.wave,
				Value: map[string]any{"orderId": oid, "customer": cust, "amount": amt + 1, "status": "CONFIRMED", "seq": int64(ws.orders + i)}})
		}
		if ws.payments {
			n := 0
			switch r := rng.Float64(); {
			case r < 0.2:
				n = 2
			case r < 0.7:
				n = 1
			}
			for range n {
				pid := fmt.Sprintf("p-w%d-%05d", ws.wave, payN)
				pays = append(pays, &inputRec{Topic: topicPayments, Key: pid, OrderID: str(oid), Wave: ws.wave,
					Value: map[string]any{"paymentId": pid, "orderId": oid, "amount": int64(1 + rng.IntN(500)), "method": "card", "seq": int64(payN)}})
				payN++
			}
		}
		if ws.shipments && i%2 == 0 {
			sid := fmt.Sprintf("s-w%d-%04d", ws.wave, shipN)
			ships = append(ships, &inputRec{Topic: topicShipments, Key: sid, OrderID: str(oid), Wave: ws.wave,
				Value: map[string]any{"shipmentId": sid, "orderId": oid, "carrier": carriers[rng.IntN(len(carriers))], "seq": int64(shipN)}})
			shipN++
		}
	}
	if ws.payments {
		// Payments for orders that never exist: a left join emits nothing for them.
		for i := range max(ws.orders/50, 1) {
			pid := fmt.Sprintf("p-w%d-%05d", ws.wave, payN)
			oid := fmt.Sprintf("x-w%d-%03d", ws.wave, i)
			pays = append(pays, &inputRec{Topic: topicPayments, Key: pid, OrderID: str(oid), Wave: ws.wave,
				Value: map[string]any{"paymentId": pid, "orderId": oid, "amount": int64(7), "method": "wire", "seq": int64(payN)}})
			payN++
		}
		for range ws.nullKeys {
			pid := fmt.Sprintf("p-w%d-%05d", ws.wave, payN)
			pays = append(pays, &inputRec{Topic: topicPayments, Key: pid, Wave: ws.wave,
				Value: map[string]any{"paymentId": pid, "orderId": nil, "amount": int64(3), "method": "cash", "seq": int64(payN)}})
			payN++
		}
	}
	if ws.shipments {
		for i := range max(ws.orders/100, 1) {
			sid := fmt.Sprintf("s-w%d-%04d", ws.wave, shipN)
			oid := fmt.Sprintf("x-w%d-%03d", ws.wave, 100+i)
			ships = append(ships, &inputRec{Topic: topicShipments, Key: sid, OrderID: str(oid), Wave: ws.wave,
				Value: map[string]any{"shipmentId": sid, "orderId": oid, "carrier": "post", "seq": int64(shipN)}})
			shipN++
		}
	}
	// Interleave the topics so that all three advance together, updates last.
	var out []*inputRec
	for i := 0; i < max(len(orders), len(pays), len(ships)); i++ {
		for _, l := range [][]*inputRec{orders, pays, ships} {
			if i < len(l) {
				out = append(out, l[i])
			}
		}
	}
	return append(out, updates...)
}

// spreadOrders builds n orders (wave w) of versions versions each (NEW, CONFIRMED, SHIPPED,
// ...), keyed not by orderId but by an event id chosen so that consecutive versions of one
// order land in different source partitions (Java's murmur2 partitioner, as kgo's default):
// out[v] holds version v of every order. The app must finish out[v] before out[v+1] is
// produced, so that the order of versions is the order of production.
func spreadOrders(w, n, versions int) [][]*inputRec {
	part := kgo.StickyKeyPartitioner(nil).ForTopic(topicOrders)
	statuses := []string{"NEW", "CONFIRMED", "SHIPPED", "DELIVERED"}
	out := make([][]*inputRec, versions)
	str := func(s string) *string { return &s }
	for i := range n {
		oid := fmt.Sprintf("o-w%d-%04d", w, i)
		prev := -1
		for v := range versions {
			var key string
			for salt := 0; ; salt++ {
				key = fmt.Sprintf("ev-%s-%d-%d", oid, v, salt)
				p := part.Partition(&kgo.Record{Key: []byte(key)}, numPartitions)
				if p != prev {
					prev = p
					break
				}
			}
			out[v] = append(out[v], &inputRec{Topic: topicOrders, Key: key, OrderID: str(oid), Wave: w,
				Value: map[string]any{"orderId": oid, "customer": fmt.Sprintf("c-%03d", i%200), "amount": int64(1000 + 10*i + v),
					"status": statuses[v%len(statuses)], "seq": int64(v*n + i)}})
		}
	}
	return out
}

// produce writes recs in order (keyed, default murmur2 partitioner like Java's), filling in
// partition and offset. chunk records go out per round trip; pause sleeps between chunks so
// that the app is mid-transaction while input still arrives.
func (d *drill) produce(ctx context.Context, recs []*inputRec, chunk int, pause time.Duration) error {
	cl, err := d.client(kgo.RecordDeliveryTimeout(5*time.Minute), kgo.ProducerLinger(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	ids := map[string]int{}
	for _, t := range sourceTopics {
		if ids[t], err = d.schemas.register(d.regURL, t+"-value", schemaFor(t)); err != nil {
			return err
		}
	}
	for start := 0; start < len(recs); start += chunk {
		end := min(start+chunk, len(recs))
		batch := make([]*kgo.Record, 0, end-start)
		for _, r := range recs[start:end] {
			v, err := d.schemas.encode(ids[r.Topic], schemaFor(r.Topic), r.Value)
			if err != nil {
				return err
			}
			batch = append(batch, &kgo.Record{Topic: r.Topic, Key: []byte(r.Key), Value: v})
		}
		if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
			return fmt.Errorf("produce: %w", err)
		}
		for i, kr := range batch {
			recs[start+i].Partition, recs[start+i].Offset = kr.Partition, kr.Offset
		}
		if pause > 0 && end < len(recs) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(pause):
			}
		}
	}
	return nil
}

// fault is one injected fault in the ground truth: the offsets it hit and the table keys whose
// effect it removed.
type fault struct {
	Kind      string   `json:"kind"`
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	From      int64    `json:"from"` // first offset hit
	To        int64    `json:"to"`   // one past the last offset hit
	Keys      []string `json:"keys"`
	Records   []string `json:"records,omitempty"` // source records the fault took away, topic/partition@offset
	Note      string   `json:"note,omitempty"`
}

type truth struct {
	Scenario string      `json:"scenario"`
	Attempt  int         `json:"attempt"` // which attempt this is (retried while preconditions did not happen)
	Records  []*inputRec `json:"records"`
	Faults   []fault     `json:"faults"`
	EOS      *eosTruth   `json:"eos,omitempty"`   // the eos scenarios (eos.go)
	Smoke    *smokeTruth `json:"smoke,omitempty"` // the smoke scenarios (smoke.go)
	Apps     *appsTruth  `json:"apps,omitempty"`  // the apps-* scenarios (steps.go)
	// WordCount is the wordcount scenario's (wordcount.go)
	WordCount *wcTruth `json:"wordcount,omitempty"`
	// Formats is the formats scenario's (formats.go)
	Formats *formatsTruth `json:"formats,omitempty"`
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// expectedOutput folds the records the app should have applied the way DrillApp does:
// orders latest, payments sum(amount), shipments latest; then the left-join chain. recs are in
// production order, which within one source partition is offset order; a key whose records
// span partitions (spreadOrders) is produced in phases the app finishes one by one, so
// production order is also the order the app applied them in. skip removes records a fault
// took away.
func expectedOutput(recs []*inputRec, skip func(*inputRec) bool) map[string]map[string]any {
	sorted := append([]*inputRec(nil), recs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Topic < sorted[j].Topic })
	orders := map[string]map[string]any{}
	paid := map[string]int64{}
	carrier := map[string]string{}
	for _, r := range sorted {
		if r.OrderID == nil || (skip != nil && skip(r)) {
			continue
		}
		k := *r.OrderID
		switch r.Topic {
		case topicOrders:
			orders[k] = r.Value
		case topicPayments:
			paid[k] += r.Value["amount"].(int64)
		case topicShipments:
			carrier[k] = r.Value["carrier"].(string)
		}
	}
	out := map[string]map[string]any{}
	for k, o := range orders {
		v := map[string]any{"orderId": k, "customer": o["customer"], "amount": o["amount"], "status": o["status"], "paid": nil, "carrier": nil}
		if p, ok := paid[k]; ok {
			v["paid"] = p
		}
		if c, ok := carrier[k]; ok {
			v["carrier"] = c
		}
		out[k] = v
	}
	return out
}
