package codec

import (
	"context"
	"encoding/base64"
	"math/rand/v2"
	"runtime"
	"testing"
	"unicode/utf8"
)

// TestBoxString checks the string, uuid and bytes serdes' one-chunk
// strings against string(data) and base64 on payloads of every length up
// to 300, kept across collections while the payloads are overwritten.
func TestBoxString(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(71, 72))
	codecs := map[string]*Codec{}
	for _, s := range []string{SerdeString, SerdeUUID, SerdeBytes} {
		c, err := New(Config{KeySerde: s, ValueSerde: s})
		if err != nil {
			t.Fatal(err)
		}
		codecs[s] = c
	}
	type kept struct {
		v    any
		want string
	}
	var all []kept
	for n := range 300 {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte('a' + r.IntN(26))
			if r.IntN(20) == 0 {
				data[i] = byte(r.Uint32())
			}
		}
		for s, c := range codecs {
			v, err := c.Decode(ctx, "t", n%2 == 0, data)
			want := string(data)
			if s == SerdeBytes {
				want = base64.StdEncoding.EncodeToString(data)
			} else if !utf8.Valid(data) {
				if err == nil {
					t.Fatalf("%s: %q decoded to %q", s, data, v)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: %q: %v", s, data, err)
			}
			if got, ok := v.(string); !ok || got != want {
				t.Fatalf("%s: %q decoded to %#v, want %q", s, data, v, want)
			}
			all = append(all, kept{v, want})
		}
		clear(data)
		if n%50 == 0 {
			runtime.GC()
		}
	}
	runtime.GC()
	for _, k := range all {
		if k.v.(string) != k.want {
			t.Fatalf("a decoded string changed to %q, was %q", k.v, k.want)
		}
	}
}
