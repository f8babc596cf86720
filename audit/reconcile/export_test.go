package reconcile

// SetCleanLatest turns judgeKey's fast path for plainly explained keys of
// latest tables (cleanLatest) on or off, for the test that checks it
// changes no report.
func SetCleanLatest(on bool) { noCleanLatest = !on }

// OneMap makes a run check each table's keys in one map as they are
// read, not in buckets: the check the buckets must agree with.
func OneMap(o Options) Options { o.oneMap = true; return o }
