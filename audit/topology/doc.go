// Package topology reads a Kafka Streams application's shape and the
// user's pipeline spec.
//
// The main types are Topology (the graph parsed from the text of
// Topology#describe(), Kafka 2.x to 4.x, with Format and Mermaid renderers
// and the derived Layout of stores, changelogs, repartition topics and
// joins), Discovery (what a source of evidence holds for one application.id:
// internal topics, the consumer group, transactional ids) and Spec (the
// kaudit.yaml that says what the Java lambdas do, with compiled expressions
// for select_key, reducers and joiners). Resolve ties the three together into
// a Plan: per table its source, repartition, store and changelog topics, per
// join its output topic.
package topology
