package segment

import (
	"errors"
	"testing"
)

// TestLiftLogStart: the read replica takes the highest log start of the
// replicas of its leader epoch (a broker killed -9 restarts with an older
// log-start-offset-checkpoint), never one of an older epoch, never past
// its own log end.
func TestLiftLogStart(t *testing.T) {
	ep := func(e int32) []EpochEntry { return []EpochEntry{{Epoch: e}} }
	for _, tt := range []struct {
		name  string
		rs    []*replica
		start int64
		hw    int64
	}{
		{"a replica's older checkpoint: lifted", []*replica{{logStart: 0, logEnd: 252, hw: 252, epochs: ep(5)}, {logStart: 30, logEnd: 252, hw: 252, epochs: ep(5)}}, 30, 252},
		{"the read replica's is the highest: kept", []*replica{{logStart: 30, logEnd: 252, hw: 252, epochs: ep(5)}, {logStart: 0, logEnd: 252, hw: 252, epochs: ep(5)}}, 30, 252},
		{"an older epoch's replica (an unclean election's old leader): not taken", []*replica{{logStart: 0, logEnd: 100, hw: 100, epochs: ep(6)}, {logStart: 30, logEnd: 252, hw: 252, epochs: ep(5)}}, 0, 100},
		{"an unreadable replica: not taken", []*replica{{logStart: 0, logEnd: 252, hw: 252, epochs: ep(5)}, {logStart: 30, logEnd: 252, hw: 252, epochs: ep(5), err: errors.New("bad")}}, 0, 252},
		{"never past the log end", []*replica{{logStart: 0, logEnd: 20, hw: 10, epochs: ep(5)}, {logStart: 30, logEnd: 252, hw: 252, epochs: ep(5)}}, 20, 20},
		{"one replica", []*replica{{logStart: 0, logEnd: 252, hw: 252, epochs: ep(5)}}, 0, 252},
	} {
		t.Run(tt.name, func(t *testing.T) {
			liftLogStart(tt.rs)
			if p := tt.rs[0]; p.logStart != tt.start || p.hw != tt.hw {
				t.Errorf("log start %d, hw %d; want %d, %d", p.logStart, p.hw, tt.start, tt.hw)
			}
		})
	}
}
