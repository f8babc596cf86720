package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/discovery"
	"github.com/kaudit/kaudit/audit/topology"
)

// TopologyDoc is kaudit topology's document: the app's layout from its
// topology (or, with a source and no topology, from naming conventions),
// what discovery found in the source, and the config risks.
type TopologyDoc struct {
	AppID     string               `json:"app_id"`
	Source    string               `json:"source,omitempty"`
	Layout    *topology.Layout     `json:"layout"`
	Discovery *discovery.Discovery `json:"discovery,omitempty"`
	Findings  []audit.Finding      `json:"findings"`
	Topology  *topology.Topology   `json:"topology,omitempty"`
}

// TopologyJSON writes the document as indented JSON.
func TopologyJSON(w io.Writer, doc TopologyDoc) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// TopologyTable writes kaudit topology's table: the app's topics with
// their roles, its stores, joins, group, transactions, the config risks
// and what is not known.
func TopologyTable(w io.Writer, doc TopologyDoc) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	l, d := doc.Layout, doc.Discovery
	if doc.Source != "" {
		fmt.Fprintf(tw, "app %s, %s\n\n", doc.AppID, doc.Source)
	} else {
		fmt.Fprintf(tw, "app %s\n\n", doc.AppID)
	}
	info := map[string]discovery.DiscoveredTopic{}
	if d != nil {
		for _, t := range d.Topics {
			info[t.Name] = t
		}
	}
	fmt.Fprintln(tw, "TOPIC\tROLE\tPARTITIONS\tSUB-TOPOLOGIES\tSTORE")
	for _, u := range l.Topics {
		parts := "-"
		if t, ok := info[u.Name]; ok {
			if t.Exists {
				parts = strconv.Itoa(int(t.Partitions))
			} else {
				parts = "missing"
			}
		}
		name := u.Name
		if u.Pattern {
			name = "/" + name + "/ (pattern)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, u.Role, parts, intList(u.SubTopologies), orDash(u.Store))
	}
	if len(l.Stores) > 0 {
		fmt.Fprintln(tw, "\nSTORE\tCHANGELOG\tFED BY\tTHROUGH\tWRITTEN BY")
		for _, s := range l.Stores {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, s.Changelog, orDash(strings.Join(s.Sources, ", ")), orDash(strings.Join(s.Repartitions, ", ")), orDash(strings.Join(s.Writers, ", ")))
		}
	}
	if len(l.Joins) > 0 {
		fmt.Fprintln(tw, "\nJOIN\tKIND\tLEFT STORES\tRIGHT STORES\tTHEN\tOUTPUT")
		for _, j := range l.Joins {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", j.Node, j.Kind, orDash(strings.Join(j.LeftStores, ", ")), orDash(strings.Join(j.RightStores, ", ")), orDash(j.Next), orDash(strings.Join(j.Outputs, ", ")))
		}
	}
	if d != nil {
		if d.Group != nil {
			fmt.Fprintf(tw, "\nconsumer group %s: state %s, %d members, %d partitions committed\n", d.Group.Group, orDash(d.Group.State), d.Group.Members, len(d.Group.Offsets))
		}
		if len(d.Transactions) > 0 {
			fmt.Fprintln(tw, "\nTRANSACTIONAL ID\tSTATE\tPRODUCER ID\tEPOCH")
			for _, t := range d.Transactions {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", t.TransactionalID, t.State, t.ProducerID, t.ProducerEpoch)
			}
		}
	}
	if len(doc.Findings) > 0 {
		fmt.Fprintln(tw, "\nFINDING\tTOPIC\tEXPECTED\tACTUAL\tWHY")
		for _, f := range doc.Findings {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Cause, f.Topic, orDash(f.Expected), orDash(f.Actual), f.Detail)
		}
	}
	var notes []string
	if d != nil {
		notes = d.Unknown
	} else {
		notes = l.Notes
	}
	if len(notes) > 0 {
		fmt.Fprintln(tw, "\nnot known:")
		for _, n := range notes {
			fmt.Fprintln(tw, "  - "+n)
		}
	}
	return tw.Flush()
}

// intList is "1,2", or "-" for none.
func intList(l []int) string {
	if len(l) == 0 {
		return "-"
	}
	s := make([]string, len(l))
	for i, n := range l {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
