//go:build race

package topology

// raceEnabled: the race detector slows code down 5 to 20 times.
const raceEnabled = true
