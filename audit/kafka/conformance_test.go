package kafka

import (
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/sourcetest"
)

// encodeBatches encodes records (grouped by batch base offset, in order)
// as v2 record batches with their exact headers, as a broker would send
// them in a fetch response.
func encodeBatches(recs []audit.Record) [][]byte {
	var out [][]byte
	for i := 0; i < len(recs); {
		j := i
		for j < len(recs) && recs[j].Batch.BaseOffset == recs[i].Batch.BaseOffset {
			j++
		}
		out = append(out, encodeBatch(recs[i:j]))
		i = j
	}
	return out
}

func encodeBatch(recs []audit.Record) []byte {
	h := recs[0].Batch
	var attrs int16
	for i, c := range compressionNames {
		if c == h.Compression {
			attrs = int16(i)
		}
	}
	if h.LogAppendTime {
		attrs |= 0x08
	}
	if h.Transactional {
		attrs |= 0x10
	}
	if h.Control {
		attrs |= 0x20
	}
	first := recs[0].Timestamp
	var body []byte
	for _, r := range recs {
		kr := kmsg.Record{TimestampDelta64: r.Timestamp - first, OffsetDelta: int32(r.Offset - h.BaseOffset), Key: r.Key, Value: r.Value}
		for _, hd := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: hd.Key, Value: hd.Value})
		}
		kr.Length = int32(len(kr.AppendTo(nil)) - 1)
		body = kr.AppendTo(body)
	}
	b := kmsg.RecordBatch{
		FirstOffset: h.BaseOffset, PartitionLeaderEpoch: h.PartitionLeaderEpoch, Magic: 2, Attributes: attrs,
		LastOffsetDelta: h.LastOffsetDelta, FirstTimestamp: first, MaxTimestamp: h.MaxTimestamp,
		ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, FirstSequence: h.BaseSequence,
		NumRecords: int32(len(recs)), Records: body,
	}
	b.Length = int32(len(b.AppendTo(nil)) - 12)
	raw := b.AppendTo(nil)
	crc := crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli))
	raw[17], raw[18], raw[19], raw[20] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
	return raw
}

// TestSourceConformance runs the RecordSource suite shared by every source:
// a kfake cluster holds the topic, and its fetch and list-offsets answers
// serve the suite's fixture batch for batch, so that every header field
// travels through the wire format and back.
func TestSourceConformance(t *testing.T) {
	sourcetest.RunSourceTests(t, func(t *testing.T, recs []audit.Record) audit.RecordSource {
		c := newCluster(t)
		createTopic(t, newClient(t, c), sourcetest.Topic, 2, nil)
		serveLog(c, recs, map[int32]audit.PartitionOffsets{0: sourcetest.Offsets0, 1: sourcetest.Offsets1}, nil)
		return openSource(t, c, nil)
	})
}

// serveLog makes c answer Fetch and ListOffsets for topic sourcetest.Topic
// from recs, batch for batch, with offsets as the partitions' offsets. A
// read_committed fetch gets the batches below the LSO and aborted[p] as
// its aborted transactions.
func serveLog(c *kfake.Cluster, recs []audit.Record, offsets map[int32]audit.PartitionOffsets, aborted map[int32][]audit.AbortedTxn) {
	batches := map[int32][][]byte{}
	bases := map[int32][]int64{}
	lasts := map[int32][]int64{}
	byPart := map[int32][]audit.Record{}
	for _, r := range recs {
		byPart[r.Partition] = append(byPart[r.Partition], r)
	}
	for p, rs := range byPart {
		batches[p] = encodeBatches(rs)
		for i := range rs {
			if i == len(rs)-1 || rs[i+1].Batch.BaseOffset != rs[i].Batch.BaseOffset {
				bases[p] = append(bases[p], rs[i].Batch.BaseOffset)
				lasts[p] = append(lasts[p], rs[i].Batch.LastOffset())
			}
		}
	}

	c.ControlKey(int16(kmsg.Fetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.FetchRequest)
		resp, _ := fetchError(0)(req)
		fr := resp.(*kmsg.FetchResponse)
		rp := &fr.Topics[0].Partitions[0]
		p := rp.Partition
		po := offsets[p]
		rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = po.HW, po.LSO, po.LogStart
		off := req.Topics[0].Partitions[0].FetchOffset
		committed := req.IsolationLevel == 1
		for i, b := range batches[p] {
			if committed && bases[p][i] >= po.LSO {
				break
			}
			if lasts[p][i] >= off {
				rp.RecordBatches = append(rp.RecordBatches, b...)
			}
		}
		if committed {
			for _, a := range aborted[p] {
				at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
				at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
				rp.AbortedTransactions = append(rp.AbortedTransactions, at)
			}
		}
		return fr, nil, true
	})
	c.ControlKey(int16(kmsg.ListOffsets), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.ListOffsetsRequest)
		resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition, sp.Timestamp, sp.LeaderEpoch = rp.Partition, -1, 0
				po := offsets[rp.Partition]
				switch {
				case rp.Timestamp == -2:
					sp.Offset = po.LogStart
				case req.IsolationLevel == 1:
					sp.Offset = po.LSO
				default:
					sp.Offset = po.HW
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
}
