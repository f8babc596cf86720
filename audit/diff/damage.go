package diff

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kaudit/kaudit/audit"
)

// Damage and undecodable records. A record kaudit decodes came whole out
// of a batch whose CRC held: a batch that fails it, or a cut or damaged
// segment, is unreadable evidence (the sources refuse it; a capture
// bundle checks every batch when it is opened), never a record to decode.
// A whole record the serde cannot decode is the producer's doing, and is
// undecodable (an anomaly), when the serdes are the user's (--spec).
// Without --spec the serdes are the inference's guess, from a sample of
// the records (and of what could be read: a count store's Longs read with
// the streams' JSON serde because its changelog was damaged, a JSON
// output read as the app's Avro): that a record does not decode with them
// says the guess is wrong as much as the record, so those records are
// missing evidence, one entry per topic, never anomalies.

// undecodableOfGuess turns, in a report audited with an inferred spec,
// the undecodable findings into missing evidence, naming what could not be
// read where something could not.
func undecodableOfGuess(rep *audit.Report) {
	var unreadable []string
	for _, f := range rep.Findings {
		if f.Cause == audit.CauseUnreadable {
			if tp := fmt.Sprintf("%s/%d", f.Topic, f.Partition); !slices.Contains(unreadable, tp) {
				unreadable = append(unreadable, tp)
			}
		}
	}
	type undecoded struct {
		n     int64
		first string
	}
	by := map[string]*undecoded{}
	var topics []string
	rep.Findings = slices.DeleteFunc(rep.Findings, func(f audit.Finding) bool {
		if f.Cause != audit.CauseUndecodable {
			return false
		}
		u := by[f.Topic]
		if u == nil {
			u = &undecoded{first: f.Detail}
			by[f.Topic] = u
			topics = append(topics, f.Topic)
		}
		u.n += max(f.Count, 1)
		return true
	})
	slices.Sort(topics)
	slices.Sort(unreadable)
	if len(unreadable) > 3 {
		unreadable = append(unreadable[:3], fmt.Sprintf("%d more", len(unreadable)-3))
	}
	damage := ""
	if len(unreadable) > 0 {
		damage = fmt.Sprintf(", and part of the evidence could not be read (%s)", strings.Join(unreadable, ", "))
	}
	for _, t := range topics {
		rep.Summary.Missing = append(rep.Summary.Missing, fmt.Sprintf("%d records of %s do not decode with the serdes inferred from the evidence (the first: %s)%s: which serde they were written with is not known, so they are not judged undecodable; name the serdes in a spec",
			by[t].n, t, by[t].first, damage))
	}
}
