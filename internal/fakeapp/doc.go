// Package fakeapp writes a Kafka Streams-shaped app, with injected faults
// and their ground truth, into memory or an in-process kfake cluster:
// Memory, an in-memory audit.Source that is a real implementation (not a
// mock), and the scenario generator (every reducer, windows, the stateless
// steps, every cause). kaudit demo runs on it, and so do the kfake tier's
// tests: it is in the binary, so it is named for what it is, not for the
// tests (docs/decisions.md).
package fakeapp
