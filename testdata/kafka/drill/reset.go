package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// resetCluster empties a running cluster for the next scenario instead of restarting it (a
// KRaft node takes 15-50 s to start on a busy 2-core machine): it deletes the app's group and
// every non-internal topic, and waits until they are gone. Offsets restart at 0 on the
// recreated topics; the next app run has a new state dir, hence a new transactional id.
func (d *drill) resetCluster(ctx context.Context) error {
	adm, closeFn, err := d.admin()
	if err != nil {
		return err
	}
	defer closeFn()
	c, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	groups := []string{appID, eosAppID, smokeAppID}
	for _, a := range append(append([]stepsApp(nil), stepsApps...), fmtApps...) {
		groups = append(groups, a.appID)
	}
	for _, g := range groups {
		if err := d.waitGroupEmptyOf(c, g); err != nil {
			return err
		}
		if res, err := adm.DeleteGroups(c, g); err != nil {
			return fmt.Errorf("delete group %s: %w", g, err)
		} else if err := res.Error(); err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
			return fmt.Errorf("delete group %s: %w", g, err)
		}
	}
	td, err := adm.ListTopics(c)
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	names := td.Names()
	if len(names) > 0 {
		res, err := adm.DeleteTopics(c, names...)
		if err != nil {
			return fmt.Errorf("delete topics: %w", err)
		}
		if err := res.Error(); err != nil {
			return fmt.Errorf("delete topics: %w", err)
		}
	}
	return waitTopicsGone(c, adm)
}

// waitGroupEmpty waits until the app's group has no member. Kafka Streams 3.6 does not send
// LeaveGroup on close (its consumers run with internal.leave.group.on.close=false), so a
// stopped app's member stays until session.timeout.ms (6 s in the drill app) expires.
func (d *drill) waitGroupEmpty(ctx context.Context) error { return d.waitGroupEmptyOf(ctx, appID) }

// waitGroupEmptyOf is waitGroupEmpty for group appID.
func (d *drill) waitGroupEmptyOf(ctx context.Context, appID string) error {
	adm, closeFn, err := d.admin()
	if err != nil {
		return err
	}
	defer closeFn()
	deadline := time.Now().Add(60 * time.Second)
	t0 := time.Now()
	for {
		gs, err := adm.DescribeGroups(ctx, appID)
		if err == nil {
			g := gs[appID]
			if g.Err != nil && !errors.Is(g.Err, kerr.GroupIDNotFound) {
				err = g.Err
			} else if len(g.Members) == 0 && g.State != "PreparingRebalance" && g.State != "CompletingRebalance" {
				if d := time.Since(t0); d > time.Second {
					logf("group %s empty after %s", appID, d.Round(100*time.Millisecond))
				}
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("group %s still has members after 60s (last error %v)", appID, err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitTopicsGone waits until the cluster lists no topic (their deletion done), or c ends.
func waitTopicsGone(c context.Context, adm *kadm.Client) error {
	for {
		td, err := adm.ListTopics(c)
		if err == nil && len(td.Names()) == 0 {
			return nil
		}
		if c.Err() != nil {
			return fmt.Errorf("topics still listed after deletion: %v", td.Names())
		}
		time.Sleep(250 * time.Millisecond)
	}
}
