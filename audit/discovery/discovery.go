// Package discovery finds what a source of evidence holds for one Kafka
// Streams application.id: its topics with their roles (from the topology,
// else naming conventions), partition counts and configs, its consumer
// group and transactional ids; the config-risk findings on those topics;
// and whether a spec's plan fits them (CheckPlan).
package discovery

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kaudit/kaudit/audit/spec"

	"github.com/kaudit/kaudit/audit/topology"

	"github.com/kaudit/kaudit/audit"
)

// What a discovery without a topology cannot know, each an entry of
// Discovery.Unknown as it is: a reader of Unknown (kaudit init, which
// finds some of them from the evidence) tells them by these values.
const (
	UnknownOutputs = "output topics: not known without a topology (--topology)"
	UnknownFeeds   = "which source topic feeds which repartition topic and store: not known without a topology"
	UnknownJoins   = "joins and the stores they read: not known without a topology"
)

// Discovery is what a source of evidence holds for one application.id:
// its topics with their roles, partition counts and configs, its consumer
// group and its transactional ids.
type Discovery struct {
	AppID  string            `json:"app_id"`
	Topics []DiscoveredTopic `json:"topics"`
	// Group is the consumer group named after the application.id, nil
	// when the source has none.
	Group        *audit.GroupOffsets `json:"group,omitempty"`
	Transactions []audit.Transaction `json:"transactions,omitempty"`
	// Layout is the topology's layout when a topology was given.
	Layout *topology.Layout `json:"-"`
	// Unknown lists, in plain words, what could not be inferred or read.
	Unknown []string `json:"unknown,omitempty"`
	all     map[string]audit.TopicInfo
	topo    *topology.Topology
}

// DiscoveredTopic is one topic of the application.
type DiscoveredTopic struct {
	audit.TopicInfo
	Role   topology.TopicRole `json:"role"`
	Store  string             `json:"store,omitempty"` // for a changelog
	Exists bool               `json:"exists"`
}

// Topic returns any topic of the source by name, whether or not the
// application uses it.
func (d *Discovery) Topic(name string) (audit.TopicInfo, bool) {
	t, ok := d.all[name]
	return t, ok
}

// ByRole lists the application's topics of one role.
func (d *Discovery) ByRole(role topology.TopicRole) []DiscoveredTopic {
	var out []DiscoveredTopic
	for _, t := range d.Topics {
		if t.Role == role {
			out = append(out, t)
		}
	}
	return out
}

// internalRole guesses an internal topic's role from its name with the
// <app>- prefix removed; ok is false when the name follows no convention.
func internalRole(rest string) (role topology.TopicRole, store string, ok bool) {
	l := strings.ToLower(rest)
	switch {
	case strings.HasSuffix(rest, "-changelog"):
		return topology.RoleChangelog, strings.TrimSuffix(rest, "-changelog"), true
	case strings.HasSuffix(rest, "-repartition"):
		return topology.RoleRepartition, "", true
	case strings.HasSuffix(l, "-topic") && (strings.Contains(l, "subscription-registration") || strings.Contains(l, "subscription-response")):
		return topology.RoleSubscription, "", true
	}
	return "", "", false
}

// Discover reads what src holds for appID: internal topics by the prefix
// <app>- and their suffix (-changelog, -repartition, foreign-key
// subscription topics) with partition counts and configs, the consumer
// group (its committed topics that are not internal are the source topics)
// and the transactional ids starting with <app>-. With a topology (topo
// may be nil) every topic it names is listed, present or not. What cannot
// be inferred is listed in Unknown rather than guessed.
func Discover(ctx context.Context, src audit.Source, appID string, topo *topology.Topology) (*Discovery, error) {
	if appID == "" {
		return nil, errors.New("discover: no application.id")
	}
	infos, err := src.Topics(ctx)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	d := &Discovery{AppID: appID, all: map[string]audit.TopicInfo{}, topo: topo}
	for _, t := range infos {
		d.all[t.Name] = t
	}
	found := map[string]*DiscoveredTopic{}
	add := func(name string, role topology.TopicRole, store string) {
		if _, ok := found[name]; ok {
			return
		}
		info, ok := d.all[name]
		if !ok {
			info = audit.TopicInfo{Name: name}
		}
		found[name] = &DiscoveredTopic{TopicInfo: info, Role: role, Store: store, Exists: ok}
	}
	prefix := appID + "-"
	for _, t := range infos {
		rest, ok := strings.CutPrefix(t.Name, prefix)
		if !ok {
			continue
		}
		if role, store, ok := internalRole(rest); ok {
			add(t.Name, role, store)
		} else if topo == nil {
			d.Unknown = append(d.Unknown, fmt.Sprintf("topic %s starts with %s but follows no internal-topic convention: not classified", t.Name, prefix))
		}
	}
	if topo != nil {
		d.Layout = topo.Layout(appID)
		for _, u := range d.Layout.Topics {
			_, full := d.all[u.Name]
			_, plain := d.all[u.As]
			switch {
			case !u.Pattern && u.Name != u.As && u.Role != topology.RoleChangelog && !full && plain:
				// Written and read by the app under the user's own name
				// (to("t") then stream("t")): describe() cannot tell it
				// from an internal topic, the cluster can.
				add(u.As, topology.RoleInternal, "")
				d.Unknown = append(d.Unknown, fmt.Sprintf("topic %s is written and read by the app under its own name, not %s", u.As, u.Name))
				continue
			case !u.Pattern:
				add(u.Name, u.Role, u.Store)
				continue
			}
			re, err := regexp.Compile("^(?:" + u.Name + ")$")
			if err != nil {
				d.Unknown = append(d.Unknown, fmt.Sprintf("source pattern %s does not compile in Go (%v): its topics are not known", u.Name, err))
				continue
			}
			n := 0
			for _, t := range infos {
				if re.MatchString(t.Name) {
					add(t.Name, topology.RoleSource, "")
					n++
				}
			}
			if n == 0 {
				d.Unknown = append(d.Unknown, "no topic matches source pattern "+u.Name)
			}
		}
		d.Unknown = append(d.Unknown, d.Layout.Notes...)
	}

	group, err := src.GroupOffsets(ctx, appID)
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, audit.ErrGroupNotFound):
		d.Unknown = append(d.Unknown, "consumer group "+appID+" not found: no committed offsets")
	case err != nil:
		d.Unknown = append(d.Unknown, fmt.Sprintf("consumer group %s: %v", appID, err))
	default:
		d.Group = &group
		var committed []string
		for tp := range group.Offsets {
			if !slices.Contains(committed, tp.Topic) {
				committed = append(committed, tp.Topic)
			}
		}
		slices.Sort(committed)
		for _, name := range committed {
			if _, ok := found[name]; ok {
				continue
			}
			if _, _, internal := internalRole(strings.TrimPrefix(name, prefix)); strings.HasPrefix(name, prefix) && internal {
				continue
			}
			if topo != nil {
				d.Unknown = append(d.Unknown, "the group commits offsets on "+name+", which the topology does not read")
			}
			add(name, topology.RoleSource, "")
		}
	}
	if topo == nil {
		if len(d.Topics) == 0 && d.Group == nil {
			d.Unknown = append(d.Unknown, "source topics: not known without the consumer group or a topology")
		}
		d.Unknown = append(d.Unknown, UnknownOutputs, UnknownFeeds, UnknownJoins)
	}

	txns, err := src.Transactions(ctx, prefix)
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		d.Unknown = append(d.Unknown, fmt.Sprintf("transactional ids %s*: %v", prefix, err))
	default:
		d.Transactions = txns
		slices.SortFunc(d.Transactions, func(a, b audit.Transaction) int { return cmp.Compare(a.TransactionalID, b.TransactionalID) })
	}

	roleRank := map[topology.TopicRole]int{topology.RoleSource: 0, topology.RoleGlobal: 1, topology.RoleRepartition: 2, topology.RoleSubscription: 3, topology.RoleInternal: 4, topology.RoleChangelog: 5, topology.RoleOutput: 6}
	for _, t := range found {
		d.Topics = append(d.Topics, *t)
	}
	slices.SortFunc(d.Topics, func(a, b DiscoveredTopic) int {
		return cmp.Or(cmp.Compare(roleRank[a.Role], roleRank[b.Role]), cmp.Compare(a.Name, b.Name))
	})
	for _, t := range d.Topics {
		if !t.Exists {
			d.Unknown = append(d.Unknown, fmt.Sprintf("%s topic %s is named by the topology but does not exist", t.Role, t.Name))
		}
	}
	return d, nil
}

// ConfigRisks returns the config-risk findings of the application's
// topics: a compacted repartition topic, a changelog that is not
// compacted, min.insync.replicas below 2 with a replication factor of 3 or
// more, unclean leader election enabled.
func ConfigRisks(d *Discovery) []audit.Finding { return ConfigRisksFor(d, 0) }

// ConfigRisksFor is ConfigRisks plus, when outage > 0, source and
// repartition topics whose retention.ms is shorter than the outage.
func ConfigRisksFor(d *Discovery, outage time.Duration) []audit.Finding {
	var out []audit.Finding
	risk := func(t DiscoveredTopic, expected, actual, detail string) {
		f := audit.NewFinding(audit.StageConfig, audit.CauseConfigRisk, audit.TopicPartition{Topic: t.Name, Partition: -1}, -1)
		f.Count = 0
		f.Expected, f.Actual, f.Detail = expected, actual, detail
		out = append(out, f)
	}
	for _, t := range d.Topics {
		if !t.Exists {
			continue
		}
		policy, hasPolicy := t.Configs["cleanup.policy"]
		switch t.Role {
		case topology.RoleRepartition, topology.RoleSubscription:
			if t.Compacted() {
				risk(t, "cleanup.policy=delete", "cleanup.policy="+policy,
					fmt.Sprintf("%s topic %s is compacted: the cleaner may remove records of a key before Streams applies them", t.Role, t.Name))
			}
		case topology.RoleChangelog:
			if hasPolicy && !t.Compacted() {
				risk(t, "cleanup.policy=compact", "cleanup.policy="+policy,
					fmt.Sprintf("changelog %s of store %s is not compacted: retention can delete the only copy of a key's state, and a restore then loses it", t.Name, t.Store))
			}
		}
		if v, ok := t.Configs["min.insync.replicas"]; ok && t.ReplicationFactor >= 3 {
			if n, err := strconv.Atoi(v); err == nil && n < 2 {
				risk(t, "min.insync.replicas>=2", "min.insync.replicas="+v,
					fmt.Sprintf("topic %s has replication factor %d but min.insync.replicas=%s: an acknowledged write can live on one broker only", t.Name, t.ReplicationFactor, v))
			}
		}
		if v := t.Configs["unclean.leader.election.enable"]; strings.EqualFold(v, "true") {
			risk(t, "unclean.leader.election.enable=false", "unclean.leader.election.enable=true",
				fmt.Sprintf("topic %s allows unclean leader election: an out-of-sync replica can become leader and truncate acknowledged records", t.Name))
		}
		if outage > 0 && (t.Role == topology.RoleSource || t.Role == topology.RoleRepartition) && (!hasPolicy || strings.Contains(policy, "delete")) {
			if v, ok := t.Configs["retention.ms"]; ok {
				if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms >= 0 && time.Duration(ms)*time.Millisecond < outage {
					risk(t, "retention.ms>="+strconv.FormatInt(outage.Milliseconds(), 10), "retention.ms="+v,
						fmt.Sprintf("%s topic %s keeps records %s, less than the outage of %s: records not consumed in time are deleted", t.Role, t.Name, time.Duration(ms)*time.Millisecond, outage))
				}
			}
		}
	}
	audit.SortFindings(out)
	return out
}

// CheckSpec resolves the spec against the topology discovery was given
// (or naming conventions) and cross-checks the plan with CheckPlan.
func CheckSpec(s *spec.Spec, d *Discovery) error {
	p, err := spec.Resolve(s, d.topo, d.AppID)
	if err != nil {
		return err
	}
	return CheckPlan(s, d, p)
}

// CheckPlan cross-checks a plan against what discovery found: every
// table's source topic exists, every store's changelog exists, the
// repartition topic exists, and the topics a join co-partitions have the
// same partition count. Errors name the spec's file, line and field.
func CheckPlan(s *spec.Spec, d *Discovery, p *spec.Plan) error {
	var errs []error
	fail := func(line int, field, format string, args ...any) {
		errs = append(errs, &spec.SpecError{File: s.File, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	parts := map[string]int32{}
	for i, t := range p.Tables {
		field := fmt.Sprintf("tables[%d]", i)
		line := 0
		if t.Spec != nil {
			line = t.Spec.Line
		}
		for _, m := range t.Members {
			if _, ok := d.Topic(m.Source); !ok {
				fail(line, field+".cogroup", "topic %s does not exist", m.Source)
			}
		}
		if t.Source == "" && len(t.Members) > 0 {
			continue // a cogroup: its members' sources
		}
		src, ok := d.Topic(t.Source)
		if !ok {
			fail(line, field+".source", "topic %s does not exist", t.Source)
		}
		cl, ok := d.Topic(t.Changelog)
		if !ok {
			fail(line, field+".store", "store %s has no changelog: topic %s does not exist", t.Store, t.Changelog)
		} else {
			parts[t.Name] = cl.Partitions
		}
		if t.Repartition != "" {
			rep, ok := d.Topic(t.Repartition)
			switch {
			case !ok:
				fail(line, field+".repartition", "repartition topic %s does not exist", t.Repartition)
			case cl.Partitions != 0 && rep.Partitions != cl.Partitions:
				fail(line, field+".repartition", "repartition topic %s has %d partitions but changelog %s has %d: they must be co-partitioned", t.Repartition, rep.Partitions, t.Changelog, cl.Partitions)
			}
		} else if src.Partitions != 0 && cl.Partitions != 0 && src.Partitions != cl.Partitions {
			fail(line, field+".source", "source %s has %d partitions but changelog %s has %d: without a repartition topic they must be co-partitioned", t.Source, src.Partitions, t.Changelog, cl.Partitions)
		}
	}
	for i, j := range p.Joins {
		field := fmt.Sprintf("joins[%d]", i)
		line := 0
		if j.Spec != nil {
			line = j.Spec.Line
		}
		if _, ok := d.Topic(j.Output); !ok {
			fail(line, field+".output", "topic %s does not exist", j.Output)
		}
		want, ok := parts[j.Left]
		if !ok {
			continue
		}
		for _, r := range j.Right {
			if n, ok := parts[r]; ok && n != want {
				fail(line, field+".right", "table %s has %d partitions but %s has %d: a table-table join needs co-partitioned tables", r, n, j.Left, want)
			}
		}
	}
	return errors.Join(errs...)
}

// NamingLayout is the layout naming conventions allow without a topology
// (topology.NamingLayout over the topics found), or the topology's when
// discovery was given one. Which source feeds which repartition topic,
// and the joins, are not known: see Unknown.
func (d *Discovery) NamingLayout() *topology.Layout {
	if d.Layout != nil {
		return d.Layout
	}
	uses := make([]topology.TopicUse, 0, len(d.Topics))
	for _, t := range d.Topics {
		uses = append(uses, topology.TopicUse{Name: t.Name, As: t.Name, Role: t.Role, Store: t.Store})
	}
	return topology.NamingLayout(d.AppID, uses, func(topic string) bool { _, ok := d.all[topic]; return ok })
}
