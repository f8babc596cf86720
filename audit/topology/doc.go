// Package topology reads a Kafka Streams application's shape from the text
// of Topology#describe(), Kafka 2.x to 4.x: the graph (Topology, with
// Format and Mermaid renderers), its Layout of stores, changelogs,
// repartition topics, joins and output topics, and the internal topic
// names Streams derives from the application.id. It does no I/O on
// evidence: what a source holds for the app is audit/discovery; what the
// app's lambdas do is the spec, audit/spec.
package topology
