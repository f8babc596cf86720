package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// The value schemas. Every source record carries orderId (what the app's
// selectKey reads) and fields that pad it to about 200 bytes.
func eventSchema(name string) string {
	return `{"type":"record","name":"` + name + `","namespace":"bench","fields":[` +
		`{"name":"orderId","type":"string"},` +
		`{"name":"amount","type":"double"},` +
		`{"name":"customer","type":"string"},` +
		`{"name":"currency","type":"string"},` +
		`{"name":"status","type":"string"},` +
		`{"name":"note","type":"string"}]}`
}

// statusSchema is the output's: the spec's joiner
// {"orderId": left.orderId, "orderAmount": left.amount, "paid": r1?.amount, "shipped": r2?.amount}.
const statusSchema = `{"type":"record","name":"OrderStatus","namespace":"bench","fields":[` +
	`{"name":"orderId","type":"string"},` +
	`{"name":"orderAmount","type":"double"},` +
	`{"name":"paid","type":["null","double"],"default":null},` +
	`{"name":"shipped","type":["null","double"],"default":null}]}`

// register registers schema under subject (Confluent's REST API: an
// identical schema keeps its id) and writes it to dir/<id>.avsc, the layout
// kaudit's --schemas reads.
func register(regURL, subject, schema, dir string) (int, error) {
	body, err := json.Marshal(map[string]string{"schema": schema})
	if err != nil {
		return 0, err
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	res, err := hc.Post(regURL+"/subjects/"+subject+"/versions", "application/vnd.schemaregistry.v1+json", bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("register %s: %w", subject, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		return 0, fmt.Errorf("register %s: the registry answered %d: %s", subject, res.StatusCode, b)
	}
	var out struct {
		ID int `json:"id"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return 0, fmt.Errorf("register %s: decode %q: %w", subject, b, err)
	}
	if dir != "" {
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(out.ID)+".avsc"), []byte(schema), 0o644); err != nil {
			return 0, err
		}
	}
	return out.ID, nil
}

// Avro binary encoding, by hand: the schemas above are flat records, and
// encoding is on the generator's hot path.

func frame(b []byte, id int) []byte {
	b = append(b, 0, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(b[len(b)-4:], uint32(id))
	return b
}

func appendLong(b []byte, v int64) []byte {
	return binary.AppendUvarint(b, uint64((v<<1)^(v>>63)))
}

func appendString(b []byte, s string) []byte {
	return append(appendLong(b, int64(len(s))), s...)
}

func appendBytesString(b []byte, s []byte) []byte {
	return append(appendLong(b, int64(len(s))), s...)
}

func appendDouble(b []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
}

// appendOptDouble writes a ["null","double"] union.
func appendOptDouble(b []byte, f float64, present bool) []byte {
	if !present {
		return appendLong(b, 0)
	}
	return appendDouble(appendLong(b, 1), f)
}
