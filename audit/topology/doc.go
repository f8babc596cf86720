// Package topology reads a Kafka Streams application's shape and the
// user's pipeline spec. It does no I/O on evidence: what a source holds
// for the app is audit/discovery.
//
// The main types are Topology (the graph parsed from the text of
// Topology#describe(), Kafka 2.x to 4.x, with Format and Mermaid renderers
// and the derived Layout of stores, changelogs, repartition topics and
// joins, and the internal topic names) and Spec (the kaudit.yaml that says
// what the Java lambdas do, with compiled expressions for select_key,
// reducers and joiners). Resolve ties the two together into a Plan: per
// table its source, repartition, store and changelog topics, per join its
// output topic.
package topology
