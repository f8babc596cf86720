package discovery

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/xrash/smetrics"

	"github.com/kaudit/kaudit/audit"
)

// ErrUnknownApp is wrapped by CheckAppID's error: the source holds
// nothing of the application id (a typo, most likely).
var ErrUnknownApp = errors.New("unknown application id")

// CheckAppID says whether src holds anything of appID: its consumer group,
// an internal topic named appID-…, or a transactional id appID-…. When it
// holds none, the error wraps ErrUnknownApp and names the groups the
// source holds (an audit.GroupLister) and the application ids of its
// internal topics, and the one closest to appID, if one is near.
// A source that cannot list its topics is not judged (nil).
func CheckAppID(ctx context.Context, src audit.Source, appID string) error {
	if _, err := src.GroupOffsets(ctx, appID); err == nil {
		return nil
	}
	topics, err := src.Topics(ctx)
	if err != nil {
		return nil // the audit itself says what it cannot read
	}
	var apps []string
	for _, t := range topics {
		if strings.HasPrefix(t.Name, appID+"-") {
			return nil
		}
		if a := appOf(t.Name); a != "" && !slices.Contains(apps, a) {
			apps = append(apps, a)
		}
	}
	if txns, err := src.Transactions(ctx, appID); err == nil {
		for _, t := range txns {
			if strings.HasPrefix(t.TransactionalID, appID+"-") {
				return nil
			}
		}
	}
	var groups []string
	if gl, ok := src.(audit.GroupLister); ok {
		if gs, err := gl.Groups(ctx); err == nil {
			groups = gs
			slices.Sort(groups)
		}
	}
	msg := fmt.Sprintf("%s has no consumer group, internal topic or transactional id of %q", src.Describe(), appID)
	if len(groups) > 0 {
		msg += "; its groups: " + listed(groups, 20)
	}
	if len(apps) > 0 && !slices.Equal(apps, groups) {
		msg += "; its internal topics are of " + listed(apps, 20)
	}
	if s := closestApp(appID, append(slices.Clone(groups), apps...)); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	return fmt.Errorf("%w: %s", ErrUnknownApp, msg)
}

// listed is up to n names, and how many more.
func listed(names []string, n int) string {
	s := strings.Join(names[:min(len(names), n)], ", ")
	if more := len(names) - n; more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// appOf is the application id an internal topic's name starts with:
// what comes before -KSTREAM-, -KTABLE- or the store of a
// …-changelog or …-repartition topic; "" for another topic.
func appOf(topic string) string {
	if !strings.HasSuffix(topic, "-changelog") && !strings.HasSuffix(topic, "-repartition") {
		return ""
	}
	for _, marker := range []string{"-KSTREAM-", "-KTABLE-"} {
		if i := strings.Index(topic, marker); i > 0 {
			return topic[:i]
		}
	}
	return ""
}

// closestApp is the application id nearest to appID when it is near
// enough to be a typo of it.
func closestApp(appID string, apps []string) string {
	best, score := "", 0.0
	for _, a := range apps {
		if d := smetrics.JaroWinkler(appID, a, 0.7, 4); d > score {
			best, score = a, d
		}
	}
	if score < 0.85 {
		return ""
	}
	return best
}
