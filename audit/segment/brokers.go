package segment

import (
	"path/filepath"
	"strconv"
	"strings"
)

// BrokerID reads the node id a log dir's meta.properties names (node.id
// in KRaft mode, broker.id in ZooKeeper mode), or -1 when it names none.
func BrokerID(root string) int32 {
	b, err := ReadRegular(filepath.Join(root, "meta.properties"), maxPropertiesBytes)
	if err != nil {
		return -1
	}
	id := int32(-1)
	for l := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(strings.TrimSpace(l), "=")
		if !ok || (k != "node.id" && k != "broker.id") {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32); err == nil && n >= 0 {
			id = int32(n)
		}
	}
	return id
}

// label names a replica in findings: "replica DIR (broker N)", the broker
// when meta.properties names it.
func (r *replica) label() string { return "replica " + r.short() }

func (r *replica) short() string {
	if r.broker >= 0 {
		return r.path + " (broker " + strconv.Itoa(int(r.broker)) + ")"
	}
	return r.path
}
