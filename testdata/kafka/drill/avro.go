package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/hamba/avro/v2"
)

// schemaSet holds the drill app's Avro schemas (the same .avsc files the Java app loads) and
// the ids the registry gave them.
type schemaSet struct {
	byName map[string]avro.Schema // Order, Payment, Shipment, OrderStatus, GenRec (the generated apps)

	mu   sync.Mutex
	ids  map[string]int // subject -> id
	byID map[int]avro.Schema
}

func loadSchemas(dir string) (*schemaSet, error) {
	s := &schemaSet{byName: map[string]avro.Schema{}, ids: map[string]int{}, byID: map[int]avro.Schema{}}
	for _, name := range []string{"Order", "Payment", "Shipment", "OrderStatus", "GenRec"} {
		b, err := os.ReadFile(filepath.Join(dir, name+".avsc"))
		if err != nil {
			return nil, fmt.Errorf("read schema %s: %w", name, err)
		}
		sc, err := avro.Parse(string(b))
		if err != nil {
			return nil, fmt.Errorf("parse schema %s: %w", name, err)
		}
		s.byName[name] = sc
	}
	return s, nil
}

// schemaFor names the value schema of a source topic.
func schemaFor(topic string) string {
	switch topic {
	case topicOrders:
		return "Order"
	case topicPayments:
		return "Payment"
	case topicShipments:
		return "Shipment"
	default:
		return "OrderStatus"
	}
}

// register registers schema name under subject at the registry (idempotent there) and caches
// the id.
func (s *schemaSet) register(regURL, subject, name string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.ids[subject]; ok {
		return id, nil
	}
	sc := s.byName[name]
	body, _ := json.Marshal(map[string]string{"schema": sc.String()})
	res, err := http.Post(regURL+"/subjects/"+subject+"/versions", "application/vnd.schemaregistry.v1+json", bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("register %s: %w", subject, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		return 0, fmt.Errorf("register %s: registry answered %d: %s", subject, res.StatusCode, b)
	}
	var out struct {
		ID int `json:"id"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return 0, fmt.Errorf("register %s: decode answer %q: %w", subject, b, err)
	}
	s.ids[subject] = out.ID
	s.byID[out.ID] = sc
	return out.ID, nil
}

// encode frames v as Confluent Avro: magic 0, 4-byte big-endian schema id, Avro binary.
func (s *schemaSet) encode(id int, name string, v map[string]any) ([]byte, error) {
	body, err := avro.Marshal(s.byName[name], v)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", name, err)
	}
	out := make([]byte, 5, 5+len(body))
	binary.BigEndian.PutUint32(out[1:], uint32(id))
	return append(out, body...), nil
}

// decode reads a Confluent-framed value, looking the writer schema up at the registry when the
// id is not one the drill registered itself (the app registers the repartition, changelog and
// output subjects).
func (s *schemaSet) decode(regURL string, b []byte) (map[string]any, error) {
	if len(b) < 5 || b[0] != 0 {
		return nil, fmt.Errorf("value of %d bytes is not Confluent-framed", len(b))
	}
	id := int(binary.BigEndian.Uint32(b[1:5]))
	sc, err := s.lookup(regURL, id)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := avro.Unmarshal(sc, b[5:], &m); err != nil {
		return nil, fmt.Errorf("decode schema id %d: %w", id, err)
	}
	return m, nil
}

func (s *schemaSet) lookup(regURL string, id int) (avro.Schema, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sc, ok := s.byID[id]; ok {
		return sc, nil
	}
	res, err := http.Get(fmt.Sprintf("%s/schemas/ids/%d", regURL, id))
	if err != nil {
		return nil, fmt.Errorf("look up schema %d: %w", id, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("look up schema %d: registry answered %d: %s", id, res.StatusCode, b)
	}
	var out struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("look up schema %d: %w", id, err)
	}
	sc, err := avro.Parse(out.Schema)
	if err != nil {
		return nil, fmt.Errorf("parse schema %d: %w", id, err)
	}
	s.byID[id] = sc
	return sc, nil
}
