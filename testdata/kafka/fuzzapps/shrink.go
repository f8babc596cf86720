package fuzzapps

import (
	"fmt"
	"slices"
	"strings"
)

// Shrink lists smaller variants of d, most reducing first: without one of its units, without a
// stateless step, without a merge's second source, with fewer waves, records or keys, with
// simpler settings. Each is valid (Valid) and keeps d's fault; the harness runs them in order
// and keeps the first that still fails.
func Shrink(d *Desc) []*Desc {
	var out []*Desc
	keep := func(c *Desc) {
		if c == nil {
			return
		}
		SetFault(c, d.Fault)
		if c.Fault == d.Fault && Valid(c) == nil {
			out = append(out, c)
		}
	}
	units := map[int]bool{}
	for _, n := range d.Nodes {
		units[n.Unit] = true
	}
	if len(units) > 1 {
		for u := range units {
			keep(withoutUnit(d, u))
		}
	}
	for _, n := range d.Nodes {
		switch n.Op {
		case "filter", "filterNot", "mapValues", "flatMapValues", "peek":
			keep(splice(d, n.ID))
		case "merge":
			keep(withoutMerge(d, n.ID))
		}
	}
	less := func(f func(c *Desc)) {
		c := d.Clone()
		f(c)
		keep(c)
	}
	minWaves := 1
	if d.Fault == FaultSourceGap || d.Fault == FaultRepartitionGap {
		minWaves = 2
	}
	if d.Input.Waves > minWaves {
		less(func(c *Desc) { c.Input.Waves-- })
	}
	if d.Input.PerWave > 8 {
		less(func(c *Desc) { c.Input.PerWave /= 2 })
	}
	if d.Input.Keys > 3 {
		less(func(c *Desc) { c.Input.Keys = max(3, c.Input.Keys/2) })
	}
	if d.Named {
		less(func(c *Desc) {
			c.Named = false
			for _, n := range c.Nodes {
				n.Name = ""
			}
		})
	}
	if d.Partitions > 1 {
		less(func(c *Desc) { c.Partitions = 1 })
	}
	return out
}

// withoutUnit drops every node of unit u (nil when another unit reads one of them).
func withoutUnit(d *Desc, u int) *Desc {
	c := d.Clone()
	gone := map[string]bool{}
	var nodes []*Node
	for _, n := range c.Nodes {
		if n.Unit == u {
			gone[n.ID] = true
		} else {
			nodes = append(nodes, n)
		}
	}
	for _, n := range nodes {
		for _, in := range n.In {
			if gone[in] {
				return nil
			}
		}
	}
	c.Nodes = nodes
	return c
}

// splice removes stateless node id, its readers reading its input instead.
func splice(d *Desc, id string) *Desc {
	c := d.Clone()
	n := c.Node(id)
	in := n.In[0]
	c.Nodes = slices.DeleteFunc(c.Nodes, func(x *Node) bool { return x.ID == id })
	for _, x := range c.Nodes {
		for i := range x.In {
			if x.In[i] == id {
				x.In[i] = in
			}
		}
	}
	return c
}

// withoutMerge drops a merge and its second source.
func withoutMerge(d *Desc, id string) *Desc {
	c := d.Clone()
	m := c.Node(id)
	second := c.Node(m.In[1])
	if second == nil || second.Op != "stream" || len(c.Users(second.ID)) != 1 {
		return nil
	}
	c = splice(c, id)
	c.Nodes = slices.DeleteFunc(c.Nodes, func(x *Node) bool { return x.ID == second.ID })
	return c
}

// inKinds says what each op reads (by its inputs' kinds).
var inKinds = map[string][]string{
	"filter": {"stream"}, "filterNot": {"stream"}, "mapValues": {"stream"}, "flatMapValues": {"stream"}, "selectKey": {"stream"},
	"map": {"stream"}, "peek": {"stream"}, "merge": {"stream", "stream"}, "split": {"stream"}, "branch": {"split"},
	"groupByKey": {"stream"}, "groupBy": {"stream"}, "windowedBy": {"grouped"},
	"count": {"grouped|wgrouped"}, "reduce": {"grouped|wgrouped"}, "aggregate": {"grouped|wgrouped"},
	"suppress": {"table"}, "toStream": {"table"}, "toTable": {"stream"}, "to": {"stream"},
	"tableJoin": {"table", "table"}, "streamTableJoin": {"stream", "table"}, "tableGroupBy": {"table"},
	"tableCount": {"gtable"}, "tableAggregate": {"gtable"}, "tableReduce": {"gtable"}, "cogroup": {"grouped", "grouped"},
	"tableFilter": {"table"}, "tableMapValues": {"table"}, "fkJoin": {"table", "table"}, "streamJoin": {"stream", "stream"},
	"globalJoin": {"stream", "global"},
}

// Valid checks d's shape: unique ids, each input an earlier node of the kind the op reads, each
// source topic read once, a spec with at least one table or copy.
func Valid(d *Desc) error {
	kind := map[string]string{}
	topics := map[string]bool{}
	for _, n := range d.Nodes {
		if _, dup := kind[n.ID]; dup {
			return fmt.Errorf("node %s twice", n.ID)
		}
		k, ok := opKinds[n.Op]
		if !ok {
			return fmt.Errorf("node %s: unknown op %s", n.ID, n.Op)
		}
		if n.Op == "windowedBy" && n.Window == nil {
			return fmt.Errorf("node %s: windowedBy without a window", n.ID)
		}
		want := inKinds[n.Op]
		if len(want) != len(n.In) {
			return fmt.Errorf("node %s (%s): %d inputs, want %d", n.ID, n.Op, len(n.In), len(want))
		}
		for i, in := range n.In {
			got, ok := kind[in]
			if !ok {
				return fmt.Errorf("node %s reads %s, which is not an earlier node", n.ID, in)
			}
			if !slices.Contains(strings.Split(want[i], "|"), got) {
				return fmt.Errorf("node %s (%s) reads %s, a %s, want a %s", n.ID, n.Op, in, got, want[i])
			}
		}
		if n.Topic != "" {
			if topics[n.Topic] {
				return fmt.Errorf("topic %s used twice", n.Topic)
			}
			topics[n.Topic] = true
		}
		kind[n.ID] = k
	}
	y := GenerateSpec(d).YAML
	if !strings.Contains(y, "\ntables:\n") && !strings.Contains(y, "\ncopies:\n") {
		return fmt.Errorf("the spec has no table and no copy")
	}
	if d.Fault == FaultDropped && len(d.DropIDs) == 0 {
		return fmt.Errorf("fault dropped without records to drop")
	}
	return nil
}
