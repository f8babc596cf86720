// Package spec is kaudit.yaml: the user's description of what the Java
// lambdas of a Kafka Streams app do, with compiled expressions for each
// table's select_key and reducer and each join's value (RecordEnv, Reduce,
// Eval), bounded and strictly parsed, every error naming the file, line
// and field (SpecError); a spec built in code (New: kaudit's inferred
// one) names the field, no line. Resolve ties a spec to the topology
// (audit/topology) into a Plan: per table its source, repartition, store
// and changelog topics, per join its output topic.
package spec
