package reconcile

// SetCleanLatest turns judgeKey's fast path for plainly explained keys of
// latest tables (cleanLatest) on or off, for the test that checks it
// changes no report.
func SetCleanLatest(on bool) { noCleanLatest = !on }

// OneMap makes a run check each table's keys in one map as they are
// read, not in buckets: the check the buckets must agree with.
func OneMap(o Options) Options { o.oneMap = true; return o }

// SetExpectedDigest turns the join's digest of expected values from the
// fields' texts (expected) on or off, for the test that checks it changes
// no report.
func SetExpectedDigest(on bool) { disableExpectedDigest = !on }

// ExpectedMatched counts, from now on, the output keys the join judged
// by expected's digest alone, and returns a function that says how many.
func ExpectedMatched() func() int64 {
	countExpected = true
	base := expectedMatched.Load()
	return func() int64 { return expectedMatched.Load() - base }
}

// SetSearchBudget sets the explanation search's budget per key (maxNodes)
// and returns a function that restores it.
func SetSearchBudget(n int) (restore func()) {
	saved := maxNodes
	maxNodes = n
	return func() { maxNodes = saved }
}
