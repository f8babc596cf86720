//go:build race

package reconcile_test

// raceEnabled: the race detector slows the engine down 5 to 20 times; the
// scenario tests then sample their combinations instead of trying them all.
const raceEnabled = true
