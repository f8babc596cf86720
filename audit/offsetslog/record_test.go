package offsetslog

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaudit/kaudit/audit"
)

func offsetKey(v int16, group, topic string, p int32) []byte {
	k := kmsg.OffsetCommitKey{Version: v, Group: group, Topic: topic, Partition: p}
	return k.AppendTo(nil)
}

func offsetValue(v int16, off int64, meta string) []byte {
	val := kmsg.NewOffsetCommitValue()
	val.Version, val.Offset, val.Metadata, val.LeaderEpoch, val.CommitTimestamp = v, off, meta, 3, 1000
	return val.AppendTo(nil)
}

// TestPartition checks Kafka's hash against values Java
// computed (String.hashCode, Utils.abs, % n), a MinInt32 hash and
// characters outside the BMP (UTF-16 surrogates) included.
func TestPartition(t *testing.T) {
	for _, tc := range []struct {
		id       string
		n50, n4  int32
		javaHash int32
	}{
		{"", 0, 0, 0},
		{"a", 47, 1, 97},
		{"gen-app", 12, 0, -81832412},
		{"polygenelubricants", 0, 0, -2147483648},
		{"orders-app", 5, 1, 772757305},
		{"kaudit-ref", 14, 2, 639544214},
		{"app-😀-é", 3, 1, -1473111253},
		{"zzzzzzzzzzzzzzzzzzzzzzz", 36, 2, -558825286},
	} {
		if got := Partition(tc.id, 50); got != tc.n50 {
			t.Errorf("Partition(%q, 50) = %d, Java says %d (hash %d)", tc.id, got, tc.n50, tc.javaHash)
		}
		if got := Partition(tc.id, 4); got != tc.n4 {
			t.Errorf("Partition(%q, 4) = %d, Java says %d", tc.id, got, tc.n4)
		}
	}
	if got := Partition("x", 0); got != -1 {
		t.Errorf("CoordinatorPartition with no partitions = %d, want -1", got)
	}
}

// TestParse covers every key type and value version the
// decoder accepts, and the corrupt inputs it rejects.
func TestParse(t *testing.T) {
	tp := audit.TopicPartition{Topic: "t", Partition: 2}
	member := func(typ int16, g, m string) []byte {
		b := binary.BigEndian.AppendUint16(nil, uint16(typ))
		b = binary.BigEndian.AppendUint16(b, uint16(len(g)))
		b = append(b, g...)
		b = binary.BigEndian.AppendUint16(b, uint16(len(m)))
		return append(b, m...)
	}
	gm := kmsg.NewGroupMetadataValue()
	gm.Version, gm.ProtocolType, gm.Members = 4, "consumer", []kmsg.GroupMetadataValueMember{{MemberID: "m1"}, {MemberID: "m2"}}
	for _, tc := range []struct {
		name       string
		key, value []byte
		want       Record
		err        error
	}{
		{"commit key v0 value v0", offsetKey(0, "g", "t", 2), offsetValue(0, 5, "a"), Record{Kind: Commit, KeyType: 0, Group: "g", TP: tp}, nil},
		{"commit key v1 value v1", offsetKey(1, "g", "t", 2), offsetValue(1, 5, "a"), Record{Kind: Commit, KeyType: 1, Group: "g", TP: tp}, nil},
		{"value v2", offsetKey(1, "g", "t", 2), offsetValue(2, 5, "a"), Record{Kind: Commit, KeyType: 1, Group: "g", TP: tp}, nil},
		{"value v3", offsetKey(1, "g", "t", 2), offsetValue(3, 5, "a"), Record{Kind: Commit, KeyType: 1, Group: "g", TP: tp}, nil},
		{"value v4 (flexible, 4.1)", offsetKey(1, "g", "t", 2), offsetValue(4, 5, "a"), Record{Kind: Commit, KeyType: 1, Group: "g", TP: tp}, nil},
		{"tombstone", offsetKey(1, "g", "t", 2), nil, Record{Kind: Commit, KeyType: 1, Group: "g", TP: tp, Tombstone: true}, nil},
		{"group metadata v4", (&kmsg.GroupMetadataKey{Version: 2, Group: "g"}).AppendTo(nil), gm.AppendTo(nil), Record{Kind: Group, KeyType: 2, Group: "g"}, nil},
		{"group deleted", (&kmsg.GroupMetadataKey{Version: 2, Group: "g"}).AppendTo(nil), nil, Record{Kind: Group, KeyType: 2, Group: "g", Tombstone: true}, nil},
		{"consumer group member (4.x)", member(5, "g", "m1"), []byte{0, 0}, Record{Kind: Member, KeyType: 5, Group: "g", Member: "m1"}, nil},
		{"streams group member left", member(19, "g", "m1"), nil, Record{Kind: Member, KeyType: 19, Group: "g", Member: "m1", Tombstone: true}, nil},
		{"consumer group metadata", member(3, "g", ""), []byte{0, 0}, Record{Kind: Group, KeyType: 3, Group: "g"}, nil},
		{"share group record", member(11, "g", ""), []byte{0, 0}, Record{Kind: Other, KeyType: 11, Group: "g"}, nil},
		{"value v5", offsetKey(1, "g", "t", 2), offsetValue(5, 5, "a"), Record{}, audit.ErrCorrupt},
		{"short key", []byte{0}, nil, Record{}, ErrTruncated},
		{"negative key type", []byte{0xff, 0xff, 0, 0}, nil, Record{}, audit.ErrCorrupt},
		{"key cut short", offsetKey(1, "g", "t", 2)[:6], nil, Record{}, audit.ErrCorrupt},
		{"value cut short", offsetKey(1, "g", "t", 2), offsetValue(3, 5, "a")[:9], Record{}, audit.ErrCorrupt},
		{"negative partition", offsetKey(1, "g", "t", -1), nil, Record{}, audit.ErrCorrupt},
		{"member key without member", member(5, "g", "")[:6], nil, Record{}, ErrTruncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.key, tc.value)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("error %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Kind == Commit && !got.Tombstone && (got.Commit == nil || got.Commit.Offset != 5 || got.Commit.Metadata != "a") {
				t.Errorf("commit %+v", got.Commit)
			}
			if got.KeyType == 2 && !got.Tombstone && (got.Meta == nil || len(got.Meta.Members) != 2) {
				t.Errorf("group metadata %+v", got.Meta)
			}
			got.Commit, got.Meta = nil, nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
