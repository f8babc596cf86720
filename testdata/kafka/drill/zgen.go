package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
)

// Input and folds of the z-apps (ZApps.java: enrich, regroup, cogroup, fkjoin) in the apps-*
// scenarios: each app's records, produced phase by phase (every z-app processes and commits a
// phase before the next one is produced, so that what a stream-table join sees is known), and
// the drill's own fold of them, computed the way ZApps.java does, to check the apps' outputs
// independently of kaudit.

// Tags of the z-apps' records the drill made for a reason.
const (
	tagTombstone  = "tombstone"    // a null value: the table deletes the key
	tagNullKey    = "null-key"     // an order with a null customer: selectKey gives a null key
	tagGhostDel   = "ghost-delete" // a tombstone for a key the table never held
	tagZeroMs     = "zero-ms"      // a view of 0 ms: the cogroup app's filter drops it
	zPhaseCount   = 6
	zProductCount = 24
)

// zCategories are the regroup app's product categories; garden is emptied in phase 4.
var zCategories = []string{"books", "games", "music", "tools", "toys", "garden"}

// zSwallowedViews are the cogroup app's views its filter swallows in apps-faults (-Ddrop.keys):
// views of more than 0 ms, which the declared filter passes.
var zSwallowedViews = []string{"gv-w1-007", "gv-w1-033", "gv-w1-061", "gv-w1-095", "gv-w1-130"}

// genZApps is the z-apps' wave 1, phase by phase: each phase holds every z-app's records of
// that phase, interleaved.
func genZApps() [][]*inputRec {
	regroup, _ := genRegroupApp()
	enrich, cogroup, fkjoin := genEnrichApp(), genCogroupApp(), genFKJoinApp()
	out := make([][]*inputRec, zPhaseCount)
	for i := range out {
		out[i] = interleave(enrich[i], regroup[i], cogroup[i], fkjoin[i])
	}
	return out
}

func strp(s string) *string { return &s }

// genEnrichApp is the enrich app's wave 1: customers and orders never in one phase, so that
// each order meets the customers table as the phases before it left it.
//
//	0: customers c-00..c-09 created
//	1: 40 orders (customers c-00..c-24: c-10..c-19 not yet created, c-20..c-24 never are)
//	2: c-10..c-19 created, c-00..c-04 updated, c-05 and c-06 deleted, a tombstone for c-23
//	   (which never existed)
//	3: 40 orders
//	4: c-05 created again, c-10 deleted, c-11 updated
//	5: 30 orders
//
// Every 37th order (from the sixth) has a null customer: a null key after selectKey.
func genEnrichApp() [][]*inputRec {
	rng := rand.New(rand.NewPCG(20261205, 1))
	tiers := []string{"gold", "silver", "bronze"}
	cust := func(i, v int) *inputRec {
		id := fmt.Sprintf("c-%02d", i)
		return &inputRec{App: "enrich", Topic: "ze-customers", Key: id, OrderID: strp(id), Wave: 1,
			Value: map[string]any{"id": id, "name": fmt.Sprintf("Customer %02d v%d", i, v), "tier": tiers[(i+v)%3]}}
	}
	tomb := func(i int, tag string) *inputRec {
		id := fmt.Sprintf("c-%02d", i)
		return &inputRec{App: "enrich", Topic: "ze-customers", Key: id, OrderID: strp(id), Wave: 1, Tag: tag}
	}
	n := 0
	orders := func(k int) []*inputRec {
		var out []*inputRec
		for range k {
			id := fmt.Sprintf("eo-w1-%03d", n)
			c := fmt.Sprintf("c-%02d", rng.IntN(25))
			rec := &inputRec{App: "enrich", Topic: "ze-orders", Key: id, OrderID: strp(c), Wave: 1,
				Value: map[string]any{"id": id, "customer": c, "amount": int64(1 + rng.IntN(500))}}
			if n%37 == 5 {
				rec.OrderID, rec.Value["customer"], rec.Tag = nil, nil, tagNullKey
			}
			out = append(out, rec)
			n++
		}
		return out
	}
	var p0, p2, p4 []*inputRec
	for i := range 10 {
		p0 = append(p0, cust(i, 1))
	}
	for i := 10; i < 20; i++ {
		p2 = append(p2, cust(i, 1))
	}
	for i := range 5 {
		p2 = append(p2, cust(i, 2))
	}
	p2 = append(p2, tomb(5, tagTombstone), tomb(6, tagTombstone), tomb(23, tagGhostDel))
	p4 = append(p4, cust(5, 3), tomb(10, tagTombstone), cust(11, 2))
	return [][]*inputRec{p0, orders(40), p2, orders(40), p4, orders(30)}
}

// genEnrichWave2 is the enrich app's second wave (apps-faults): n orders for customers that
// exist, produced while the app is down.
func genEnrichWave2(n int) []*inputRec {
	rng := rand.New(rand.NewPCG(20261205, 2))
	var out []*inputRec
	for i := range n {
		id := fmt.Sprintf("eo-w2-%03d", i)
		c := fmt.Sprintf("c-%02d", 12+rng.IntN(8)) // c-12..c-19: created in wave 1, never deleted
		out = append(out, &inputRec{App: "enrich", Topic: "ze-orders", Key: id, OrderID: strp(c), Wave: 2,
			Value: map[string]any{"id": id, "customer": c, "amount": int64(1 + rng.IntN(500))}})
	}
	return out
}

// enrichFold is what the enrich app must write, folded from its records in production order
// (phases keep customers and orders apart): per order id, the left join's value and, when the
// customer existed, the inner join's; the customers table at the end.
type enrichFold struct {
	left, inner map[string]map[string]any // by order id
	customers   map[string]map[string]any
	nullKey     []*inputRec // orders with a null customer: no copy, no output
	orders      int         // orders with a customer
}

func foldEnrich(recs []*inputRec, skip func(*inputRec) bool) enrichFold {
	f := enrichFold{left: map[string]map[string]any{}, inner: map[string]map[string]any{}, customers: map[string]map[string]any{}}
	for _, r := range recs {
		if r.App != "enrich" || (skip != nil && skip(r)) {
			continue
		}
		if r.Topic == "ze-customers" {
			if r.Value == nil {
				delete(f.customers, r.Key)
			} else {
				f.customers[r.Key] = r.Value
			}
			continue
		}
		if r.OrderID == nil {
			f.nullKey = append(f.nullKey, r)
			continue
		}
		f.orders++
		c := f.customers[*r.OrderID]
		v := map[string]any{"order": r.Value["id"], "customer": *r.OrderID, "amount": r.Value["amount"], "name": nil, "tier": nil}
		if c != nil {
			v["name"], v["tier"] = c["name"], c["tier"]
			f.inner[r.Key] = v
		}
		f.left[r.Key] = v
	}
	return f
}

// genRegroupApp is the regroup app's input: wave 1 phase by phase (phase 0 creates
// p-00..p-23; phases 1-5 each hold 14 random operations on p-00..p-25: a price change (same
// category: one repartition record with old and new), a move to another category (two
// records), a delete, or a create; phase 2 also deletes p-99, which never existed; phase 4
// moves every garden product to tools, and nothing enters garden after), and wave 2
// (apps-faults: 60 more operations, no garden).
func genRegroupApp() (wave1 [][]*inputRec, wave2 []*inputRec) {
	rng := rand.New(rand.NewPCG(20261206, 1))
	state := map[string]map[string]any{}
	prod := func(wave int, id, cat string, price int64, tag string) *inputRec {
		v := map[string]any{"id": id, "category": cat, "price": price}
		state[id] = v
		return &inputRec{App: "regroup", Topic: "zr-products", Key: id, OrderID: strp(id), Wave: wave, Value: v, Tag: tag}
	}
	del := func(wave int, id, tag string) *inputRec {
		delete(state, id)
		return &inputRec{App: "regroup", Topic: "zr-products", Key: id, OrderID: strp(id), Wave: wave, Tag: tag}
	}
	ops := func(wave, n int, cats []string) []*inputRec {
		var out []*inputRec
		for range n {
			id := fmt.Sprintf("p-%02d", rng.IntN(zProductCount+2))
			cur := state[id]
			switch r := rng.Float64(); {
			case cur == nil:
				out = append(out, prod(wave, id, cats[rng.IntN(len(cats))], int64(5+rng.IntN(95)), "create"))
			case r < 0.5:
				out = append(out, prod(wave, id, cur["category"].(string), int64(5+rng.IntN(95)), "price"))
			case r < 0.8:
				var other []string
				for _, c := range cats {
					if c != cur["category"] {
						other = append(other, c)
					}
				}
				out = append(out, prod(wave, id, other[rng.IntN(len(other))], cur["price"].(int64), "move"))
			default:
				out = append(out, del(wave, id, tagTombstone))
			}
		}
		return out
	}
	var p0 []*inputRec
	for i := range zProductCount {
		p0 = append(p0, prod(1, fmt.Sprintf("p-%02d", i), zCategories[i%len(zCategories)], int64(5+rng.IntN(95)), "create"))
	}
	noGarden := zCategories[:len(zCategories)-1]
	wave1 = [][]*inputRec{p0, ops(1, 14, zCategories), append(ops(1, 14, zCategories), del(1, "p-99", tagGhostDel)), ops(1, 14, zCategories)}
	var empty []*inputRec
	ids := make([]string, 0, len(state))
	for id := range state {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if v := state[id]; v["category"] == "garden" {
			empty = append(empty, prod(1, id, "tools", v["price"].(int64), "move"))
		}
	}
	wave1 = append(wave1, append(empty, ops(1, 14, noGarden)...), ops(1, 14, noGarden))
	return wave1, ops(2, 60, noGarden)
}

// zChange is one record of a KTable groupBy's repartition topic: the grouped key (category) and
// the Change Streams' ChangedSerializer writes (3.6: the value's bytes with a trailing flag byte,
// 0 old only, 1 new only, 2 both: a zig-zag varint of the new value's length, new, old).
type zChange struct {
	Key       string         `json:"key"`
	Flag      int            `json:"flag"`
	Old       map[string]any `json:"old,omitempty"`
	New       map[string]any `json:"new,omitempty"`
	Timestamp int64          `json:"timestamp"`
	raw       []byte         // the record's value as read (readChanges)
	at        string         // topic/partition@offset (readChanges)
	headers   int            // how many headers the record has (readChanges)
}

func (c zChange) id() string {
	b, _ := json.Marshal([]any{c.Key, c.Flag, c.Old, c.New, c.Timestamp})
	return string(b)
}

// regroupFold is what the regroup app must hold and write: per category, the products' count
// and price sum (0 for a category emptied: the aggregate keeps 0, it is no tombstone), and,
// without a cache (every update forwarded), the repartition records each update makes.
type regroupFold struct {
	counts, values map[string]int64
	changes        []zChange
	products       map[string]map[string]any
}

func foldRegroup(recs []*inputRec, skip func(*inputRec) bool) regroupFold {
	f := regroupFold{counts: map[string]int64{}, values: map[string]int64{}, products: map[string]map[string]any{}}
	for _, r := range recs {
		if r.App != "regroup" || (skip != nil && skip(r)) {
			continue
		}
		old, nw := f.products[r.Key], r.Value
		switch {
		case old != nil && nw != nil && old["category"] == nw["category"]:
			f.changes = append(f.changes, zChange{Key: nw["category"].(string), Flag: 2, Old: old, New: nw, Timestamp: r.Timestamp})
		default:
			if old != nil {
				f.changes = append(f.changes, zChange{Key: old["category"].(string), Flag: 0, Old: old, Timestamp: r.Timestamp})
			}
			if nw != nil {
				f.changes = append(f.changes, zChange{Key: nw["category"].(string), Flag: 1, New: nw, Timestamp: r.Timestamp})
			}
		}
		if old != nil {
			c := old["category"].(string)
			f.counts[c]--
			f.values[c] -= old["price"].(int64)
		}
		if nw == nil {
			delete(f.products, r.Key)
			continue
		}
		c := nw["category"].(string)
		f.counts[c]++
		f.values[c] += nw["price"].(int64)
		f.products[r.Key] = nw
	}
	return f
}

// decodeChange reads one record value of a KTable groupBy's repartition topic (ChangedSerializer,
// Streams 3.4+): the last byte is the flag; 0: the bytes before it are the old value, 1: the new
// value, 2: a zig-zag varint n, then the new value (n bytes), then the old value.
func decodeChange(b []byte) (flag int, newV, oldV []byte, err error) {
	if len(b) == 0 {
		return 0, nil, nil, errors.New("an empty Change record")
	}
	body := b[:len(b)-1]
	switch flag = int(b[len(b)-1]); flag {
	case 0:
		return 0, nil, body, nil
	case 1:
		return 1, body, nil, nil
	case 2:
		n, k := binary.Varint(body)
		if k <= 0 || n < 0 || int64(len(body)-k) < n {
			return 2, nil, nil, fmt.Errorf("a flag-2 Change record of %d bytes with a bad length prefix", len(b))
		}
		return 2, body[k : k+int(n)], body[k+int(n):], nil
	default:
		return flag, nil, nil, fmt.Errorf("a Change record's flag byte is %d, not 0, 1 or 2", flag)
	}
}

// genCogroupApp is the cogroup app's wave 1: per phase 35 clicks (keyed by user) and 25 views
// (keyed by view id, the user in the value); every 8th view lasts 0 ms (the filter drops it).
func genCogroupApp() [][]*inputRec {
	rng := rand.New(rand.NewPCG(20261207, 1))
	out := make([][]*inputRec, zPhaseCount)
	nv := 0
	for ph := range out {
		var clicks, views []*inputRec
		for range 35 {
			u := fmt.Sprintf("u-%02d", rng.IntN(10))
			clicks = append(clicks, &inputRec{App: "cogroup", Topic: "zg-clicks", Key: u, OrderID: strp(u), Wave: 1,
				Value: map[string]any{"user": u, "page": fmt.Sprintf("/p/%d", rng.IntN(30))}})
		}
		for range 25 {
			id := fmt.Sprintf("gv-w1-%03d", nv)
			u := fmt.Sprintf("u-%02d", rng.IntN(12)) // u-10, u-11 only view
			ms := int64(100 + rng.IntN(5000))
			tag := ""
			if nv%8 == 0 {
				ms, tag = 0, tagZeroMs
			}
			views = append(views, &inputRec{App: "cogroup", Topic: "zg-views", Key: id, OrderID: strp(u), Wave: 1, Tag: tag,
				Value: map[string]any{"id": id, "user": u, "ms": ms}})
			nv++
		}
		out[ph] = interleave(clicks, views)
	}
	return out
}

// foldCogroup is the cogroup app's aggregate per user: {clicks, views, ms}.
func foldCogroup(recs []*inputRec, skip func(*inputRec) bool) map[string]map[string]any {
	type agg struct{ clicks, views, ms int64 }
	m := map[string]*agg{}
	get := func(u string) *agg {
		if m[u] == nil {
			m[u] = &agg{}
		}
		return m[u]
	}
	for _, r := range recs {
		if r.App != "cogroup" || (skip != nil && skip(r)) {
			continue
		}
		if r.Topic == "zg-clicks" {
			get(r.Key).clicks++
		} else if ms := r.Value["ms"].(int64); ms > 0 {
			a := get(r.Value["user"].(string))
			a.views++
			a.ms += ms
		}
	}
	out := map[string]map[string]any{}
	for u, a := range m {
		out[u] = map[string]any{"clicks": a.clicks, "views": a.views, "ms": a.ms}
	}
	return out
}

// genFKJoinApp is the fkjoin app's wave 1:
//
//	0: products fp-00..fp-07
//	1: orders 0-29 of products fp-00..fp-11 (fp-08..fp-11 not yet created)
//	2: fp-08..fp-11 created, fp-00 and fp-01 repriced, fp-02 deleted
//	3: orders 30-59; orders 0-9 updated (quantity, product); orders 10 and 11 deleted
//	4: fp-02 created again, fp-03 deleted, fp-04 repriced
//	5: orders 60-79; orders 12-16 updated
func genFKJoinApp() [][]*inputRec {
	rng := rand.New(rand.NewPCG(20261208, 1))
	prod := func(i int, price int64) *inputRec {
		id := fmt.Sprintf("fp-%02d", i)
		return &inputRec{App: "fkjoin", Topic: "zf-products", Key: id, OrderID: strp(id), Wave: 1,
			Value: map[string]any{"id": id, "name": fmt.Sprintf("Product %02d", i), "price": price}}
	}
	delProd := func(i int) *inputRec {
		id := fmt.Sprintf("fp-%02d", i)
		return &inputRec{App: "fkjoin", Topic: "zf-products", Key: id, OrderID: strp(id), Wave: 1, Tag: tagTombstone}
	}
	order := func(i int) *inputRec {
		id := fmt.Sprintf("fo-w1-%03d", i)
		return &inputRec{App: "fkjoin", Topic: "zf-orders", Key: id, OrderID: strp(id), Wave: 1,
			Value: map[string]any{"id": id, "product": fmt.Sprintf("fp-%02d", rng.IntN(12)), "qty": int64(1 + rng.IntN(9))}}
	}
	orders := func(from, to int) []*inputRec {
		var out []*inputRec
		for i := from; i < to; i++ {
			out = append(out, order(i))
		}
		return out
	}
	price := func() int64 { return int64(10 + rng.IntN(190)) }
	var p0, p2, p4 []*inputRec
	for i := range 8 {
		p0 = append(p0, prod(i, price()))
	}
	for i := 8; i < 12; i++ {
		p2 = append(p2, prod(i, price()))
	}
	p2 = append(p2, prod(0, price()), prod(1, price()), delProd(2))
	p3 := append(orders(30, 60), orders(0, 10)...)
	for _, i := range []int{10, 11} {
		id := fmt.Sprintf("fo-w1-%03d", i)
		p3 = append(p3, &inputRec{App: "fkjoin", Topic: "zf-orders", Key: id, OrderID: strp(id), Wave: 1, Tag: tagTombstone})
	}
	p4 = append(p4, prod(2, price()), delProd(3), prod(4, price()))
	return [][]*inputRec{p0, orders(0, 30), p2, p3, p4, append(orders(60, 80), orders(12, 17)...)}
}

// genFKJoinWave2 is the fkjoin app's second wave (apps-faults): n new orders.
func genFKJoinWave2(n int) []*inputRec {
	rng := rand.New(rand.NewPCG(20261208, 2))
	var out []*inputRec
	for i := range n {
		id := fmt.Sprintf("fo-w2-%03d", i)
		out = append(out, &inputRec{App: "fkjoin", Topic: "zf-orders", Key: id, OrderID: strp(id), Wave: 2,
			Value: map[string]any{"id": id, "product": fmt.Sprintf("fp-%02d", 4+rng.IntN(8)), "qty": int64(1 + rng.IntN(9))}})
	}
	return out
}

// foldFKJoin is the fkjoin app's output at the end: per order whose product exists, the line.
func foldFKJoin(recs []*inputRec, skip func(*inputRec) bool) map[string]map[string]any {
	orders, products := map[string]map[string]any{}, map[string]map[string]any{}
	for _, r := range recs {
		if r.App != "fkjoin" || (skip != nil && skip(r)) {
			continue
		}
		m := orders
		if r.Topic == "zf-products" {
			m = products
		}
		if r.Value == nil {
			delete(m, r.Key)
		} else {
			m[r.Key] = r.Value
		}
	}
	out := map[string]map[string]any{}
	for id, o := range orders {
		p := products[o["product"].(string)]
		if p == nil {
			continue
		}
		out[id] = map[string]any{"order": id, "product": p["id"], "name": p["name"], "qty": o["qty"],
			"total": o["qty"].(int64) * p["price"].(int64)}
	}
	return out
}

// jsonSame compares two values as JSON (int64 and float64 alike).
func jsonSame(a, b any) bool {
	return jsonText(a) == jsonText(b)
}

// jsonText is v's canonical JSON text (map keys sorted, numbers as JSON has them).
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("!%v", err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		return fmt.Sprintf("!%v", err)
	}
	b, _ = json.Marshal(x)
	return string(b)
}

// tagged returns recs with tag.
func withTag(recs []*inputRec, tag string) []*inputRec {
	var out []*inputRec
	for _, r := range recs {
		if r.Tag == tag {
			out = append(out, r)
		}
	}
	return out
}

// flat is phases as one list, in order.
func flat(phases [][]*inputRec) []*inputRec {
	return slices.Concat(phases...)
}
