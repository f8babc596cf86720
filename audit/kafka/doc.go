// Package kafka is kaudit's live-cluster source: the only package that talks
// to brokers. It reads with franz-go (kgo, kadm, kmsg) and never writes.
//
// The main types are Source, which implements audit.Source,
// audit.CommittedReader and audit.CommitHistoryReader (the group's
// partition of __consumer_offsets, fetched like any other: READ on that
// topic) over one cluster, and Config, which says how to reach
// it: bootstrap servers plus Kafka's Java client properties
// (security.protocol; sasl.mechanism PLAIN, SCRAM-SHA-256/512, OAUTHBEARER
// with KIP-768's client credentials, GSSAPI or AWS_MSK_IAM, from
// sasl.jaas.config; ssl.* with JKS, PKCS12 or PEM stores, read by package
// tlsstore). UnusedProperties names the properties it ignores.
//
// A Source is strictly read-only: it has no group id and never joins a
// group, commits, produces, creates topics, deletes records, changes configs
// or initializes a producer id. Records issues raw Fetch requests to the
// partition leader so that every batch header (base sequence, last offset
// delta, producer id and epoch, attributes) reaches the audit, and steps past
// batches that compaction emptied by their last offset delta.
package kafka
