package segment

import (
	"encoding/binary"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/ledger"
	"github.com/kaudit/kaudit/audit/sourcetest"
)

func TestRecordsIndexed(t *testing.T) {
	root := t.TempDir()
	writeLogDir(t, root, sourcetest.Fixture(), 3, 6)
	d := mustOpen(t, root)
	for _, tc := range []struct {
		tp   audit.TopicPartition
		from int64
		want audit.CommittedIndex
	}{
		{tp0, 0, audit.CommittedIndex{LSO: 10, Aborted: []audit.AbortedTxn{{ProducerID: 2001, FirstOffset: 6}}}},
		{tp0, 9, audit.CommittedIndex{LSO: 10}}, // its ABORT marker is below 9
		{tp1, 0, audit.CommittedIndex{LSO: 2}},
	} {
		var idx audit.CommittedIndex
		var got []audit.Record
		for r, err := range d.RecordsIndexed(t.Context(), tc.tp, tc.from, -1, &idx) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, r)
		}
		if diff := sourcetest.Diff(got, collectAll(t, d, tc.tp, tc.from, -1)); diff != "" {
			t.Errorf("RecordsIndexed(%s, %d) differs from Records: %s", tc.tp, tc.from, diff)
		}
		if idx.LSO != tc.want.LSO || !slices.Equal(idx.Aborted, tc.want.Aborted) {
			t.Errorf("RecordsIndexed(%s, %d) index = %+v, want %+v", tc.tp, tc.from, idx, tc.want)
		}
	}
}

// TestCrossCheckTxnIndex checks that the ledger's cross-check over a log
// dir, now read once, still finds a .txnindex that aborts a transaction the
// markers commit, as the second read through ReadCommitted did.
func TestCrossCheckTxnIndex(t *testing.T) {
	root := t.TempDir()
	writeLogDir(t, root, sourcetest.Fixture())
	var ent []byte // producer 2000's committed transaction 3-4 (COMMIT at 5), listed as aborted
	ent = binary.BigEndian.AppendUint16(ent, 0)
	for _, v := range []int64{2000, 3, 5, 3} {
		ent = binary.BigEndian.AppendUint64(ent, uint64(v))
	}
	path := strings.TrimSuffix(segmentPath(t, root, tp0, 0), ".log") + ".txnindex"
	if err := os.WriteFile(path, ent, 0o644); err != nil {
		t.Fatal(err)
	}
	d := mustOpen(t, root)
	const want = "0 records it returns are not committed by the markers, 2 committed records it does not return (first at offset 3)"
	for _, src := range []struct {
		how string
		src audit.RecordSource
	}{
		{"from the index", d},
		{"from a second read", struct {
			audit.RecordSource
			audit.CommittedReader
		}{d, d}},
	} {
		l, err := ledger.Build(t.Context(), src.src, tp0, ledger.Options{CrossCheck: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Findings) != 1 || l.Findings[0].Cause != audit.CauseTransactionInconsistent || l.Findings[0].Offset != 3 ||
			!strings.Contains(l.Findings[0].Detail, want) {
			t.Errorf("%s: findings %+v, want one %s at 3: %q", src.how, l.Findings, audit.CauseTransactionInconsistent, want)
		}
	}
}
