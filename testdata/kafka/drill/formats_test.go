package main

import (
	"path/filepath"
	"reflect"
	"testing"
)

// TestFmtOrders: the formats scenario's orders are the same in every run, every 41st has no
// orderId (Streams drops it: null-key), and the JSON Schema and Avro values carry the Protobuf
// one's fields as order.schema.json and order.avsc type them.
func TestFmtOrders(t *testing.T) {
	a, b := fmtOrders(0, 120), fmtOrders(0, 120)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs make different orders")
	}
	nulls := 0
	for _, r := range a {
		if r.Value["orderId"] == nil {
			nulls++
		}
	}
	if nulls != 2 {
		t.Errorf("%d orders without an orderId, want 2", nulls)
	}
	j := fmtJSONValue(a[1].Value)
	if j["seq"] != int64(1) || j["amount"] != int64(2) || j["orderId"] != "o-01" || j["placed"] != "2025-11-30T10:00:01.25Z" {
		t.Errorf("JSON value %v", j)
	}
	if v := fmtAvroValue(a[1].Value); v["placed"] != int64(1764496801250) || v["channel"] != "STORE" {
		t.Errorf("Avro value %v", v)
	}
}

// TestFmtDescriptors: orders.proto and its import compile into the descriptor set the Python
// client and the Java app load, the import first.
func TestFmtDescriptors(t *testing.T) {
	d := &drill{root: filepath.Join("..")}
	md, err := d.fmtDescriptors(filepath.Join(t.TempDir(), "orders.fds"))
	if err != nil {
		t.Fatal(err)
	}
	if md.FullName() != "drill.Order" || md.Fields().ByName("orderId") == nil || md.Oneofs().ByName("payment") == nil {
		t.Errorf("message %s", md.FullName())
	}
}
