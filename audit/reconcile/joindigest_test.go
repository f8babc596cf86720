package reconcile_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/reconcile"
	"github.com/kaudit/kaudit/internal/fakeapp"
	"github.com/kaudit/kaudit/internal/fakeregistry"
)

// statusReversed is fakeapp.StatusSchema with its fields, and its unions'
// branches, in the other order: another schema id and other bytes for the
// same canonical value.
const statusReversed = `{"type":"record","name":"OrderStatusReversed","namespace":"demo","fields":[
 {"name":"shipped","type":["long","null"]},
 {"name":"paid","type":["long","null"]},
 {"name":"orderAmount","type":"long"},
 {"name":"orderId","type":"string"}]}`

// countingCodec counts the join's digests of expected values.
type countingCodec struct {
	*codec.Codec
	texts atomic.Int64
}

func (c *countingCodec) FieldTexts(ctx context.Context, topic string, data []byte, fields []string, dst []byte, spans [][2]int) ([]byte, bool, error) {
	c.texts.Add(1)
	return c.Codec.FieldTexts(ctx, topic, data, fields, dst, spans)
}

// TestJoinExpectedDigest: the join's expected values digested from the
// fields' texts (Join.Copies) give the report Value gives, byte for byte,
// for every join type and value: an output written under another schema
// id, its fields in another order, still matches, and an output whose
// value differs is still judged stale by Value.
func TestJoinExpectedDigest(t *testing.T) {
	reg := fakeregistry.New()
	srv := httptest.NewServer(reg)
	defer srv.Close()
	enc, err := fakeapp.NewAvroEncoder(reg)
	if err != nil {
		t.Fatal(err)
	}
	revID, err := reg.Register("order-status-reversed-value", statusReversed)
	if err != nil {
		t.Fatal(err)
	}
	rev := avro.MustParse(statusReversed)
	dec, err := codec.New(codec.Config{KeySerde: "string", ValueSerde: "avro", RegistryURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	values := []string{
		`{"orderId": left.orderId, "orderAmount": left.amount, "paid": r1?.amount, "shipped": r2?.amount}`,
		`{"shipped": r2?.amount, "orderId": left?.orderId, "paid": r1?.amount, "orderAmount": left?.amount}`,
		`{"orderId": left.orderId, "orderAmount": left.amount, "paid": r1.amount, "shipped": r2?.amount}`,
	}
	kinds := []fakeapp.FaultKind{fakeapp.FaultDrop, fakeapp.FaultStateDiverged, fakeapp.FaultJoinMissing, fakeapp.FaultDuplicate}
	fast, matches, revMatches := 0, int64(0), 0
	for seed := range 12 {
		rng := rand.New(rand.NewPCG(uint64(seed), 11))
		s := fakeapp.SeedScenario("digest", 150+rng.IntN(200))
		s.Seed = uint64(seed)
		s.Partitions = int32(1 + rng.IntN(3))
		s.Keys = max(s.Inputs/(1+rng.IntN(4)), 2)
		s.SpreadSources = rng.IntN(2) == 0
		for range rng.IntN(3) {
			s.Faults = append(s.Faults, fakeapp.Fault{Kind: kinds[rng.IntN(len(kinds))], Table: rng.IntN(3), Partition: int32(rng.IntN(int(s.Partitions)))})
		}
		// the output: a third of the keys under the reversed schema, a
		// tenth with an amount off by one
		last := map[string]bool{} // the key's last output record was altered
		reversed := map[string]bool{}
		s.Encode = func(topic string, v map[string]any) ([]byte, error) {
			if topic != s.Output {
				return enc.Encode(topic, v)
			}
			id, _ := v["orderId"].(string)
			h := fnv(id)
			last[id] = h%10 == 3
			reversed[id] = h%3 == 0
			if h%10 == 3 {
				order, _ := v["order"].(map[string]any)
				w := map[string]any{}
				for k, x := range v {
					w[k] = x
				}
				w["order"] = map[string]any{"amount": toInt(order["amount"]) + 1}
				v = w
			}
			b, err := enc.Encode(topic, v)
			if err != nil || h%3 != 0 {
				return b, err
			}
			var val map[string]any
			if err := avro.Unmarshal(avro.MustParse(fakeapp.StatusSchema), b[5:], &val); err != nil {
				return nil, err
			}
			body, err := avro.Marshal(rev, val)
			if err != nil {
				return nil, err
			}
			out := make([]byte, 5, 5+len(body))
			binary.BigEndian.PutUint32(out[1:], uint32(revID))
			return append(out, body...), nil
		}
		m := fakeapp.NewMemory(time.UnixMilli(s.Now))
		if _, err := fakeapp.Generate(s, fakeapp.NewMemoryBackend(m)); err != nil {
			t.Fatal(err)
		}
		value := values[seed%len(values)]
		typ := []string{"left", "inner", "outer"}[seed/len(values)%3]
		t.Run(fmt.Sprintf("seed%d-%s", seed, typ), func(t *testing.T) {
			p, err := scenarioPipeline(s, "avro", value)
			if err != nil {
				t.Fatal(err)
			}
			p.Joins[0].Type = typ
			if p.Joins[0].Copies == nil {
				t.Fatal("the join's value is a projection of top-level fields, yet it has no Copies")
			}
			var reps [2][]byte
			var stales [2][]string
			for i := range reps {
				reconcile.SetExpectedDigest(i == 0)
				c := &countingCodec{Codec: dec}
				matched := reconcile.ExpectedMatched()
				rep, err := reconcile.Run(t.Context(), m, p, reconcile.Options{Decoder: c, MaxTxnTimeout: 15 * time.Minute, Concurrency: 2})
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					fast += int(c.texts.Load())
					matches += matched()
				} else if c.texts.Load() != 0 {
					t.Errorf("turned off, the join still digested %d values from their fields", c.texts.Load())
				}
				reps[i], _ = json.Marshal(rep)
				for _, f := range rep.Findings {
					if f.Cause == audit.CauseJoinStale {
						stales[i] = append(stales[i], f.Key)
					}
				}
			}
			reconcile.SetExpectedDigest(true)
			if !bytes.Equal(reps[0], reps[1]) {
				t.Fatalf("the report digesting the join's expected values from fields differs from Value's:\n%s\n%s", reps[0], reps[1])
			}
			if len(s.Faults) == 0 && typ == "left" && !strings.Contains(value, "r1.amount") {
				// exactly the keys whose last output record was altered are stale
				var want []string
				for id, altered := range last {
					if altered {
						want = append(want, codec.Text(id))
					} else if reversed[id] {
						revMatches++
					}
				}
				slices.Sort(want)
				slices.Sort(stales[0])
				if !slices.Equal(want, stales[0]) {
					t.Errorf("join-stale keys %v, want %v", stales[0], want)
				}
			}
		})
	}
	if fast == 0 || matches == 0 || revMatches == 0 {
		t.Errorf("expected values digested from their fields %d, judged by that digest %d, clean keys under the reversed schema %d: want each above 0", fast, matches, revMatches)
	}
	t.Logf("expected values digested from their fields %d, judged by that digest %d", fast, matches)
}

func fnv(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

func toInt(v any) int64 {
	switch n := v.(type) {
	case int:
		return int64(n)
	case int64:
		return n
	}
	return 0
}
