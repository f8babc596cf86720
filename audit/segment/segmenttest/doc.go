// Package segmenttest is the conformance suite every audit.RecordSource
// must pass: RunSourceTests, run over the fixture Fixture returns. The
// segment reader, the snapshot reader, the in-memory and the live sources
// all run it.
package segmenttest
