// Package audittest holds kaudit's test helpers: Memory, an in-memory
// audit.Source that is a real implementation (not a mock), and the
// Streams-shaped scenario generator that writes an app's topics into a kfake
// cluster with injected faults and their ground truth.
package audittest
