// Package reconcile is kaudit's engine. Run rebuilds, from the committed
// source records below the group's committed offsets (the exactly-once cut),
// what the app's tables and outputs must hold, compares that with the
// changelogs and the output topics, and attributes every vanished input to
// exactly one stage and one cause, with its evidence.
//
// # The phases of Run
//
//  1. discover: the topics, the group's committed offsets (the cut), the
//     transactional ids (run.go).
//  2. the commit history: the skips the group's commit history and the
//     logs prove on the source partitions (history.go), before any table
//     counts those records as inputs.
//  3. the tables, at once (auditTables, run.go): for each, read the
//     repartition topic (its copies), the changelog (each key's history),
//     then the source (each input, through the table's steps: steps.go),
//     match inputs to copies, and judge each key (table.go); a key's
//     history is explained by explain.go and judged by judge.go and
//     state.go, windows by window.go, a store without a cache by
//     uncached.go, a table's own output by output.go. A table too big for
//     the memory budget is checked a bucket of keys at a time, spilled to
//     files (spill.go). A shard of the tasks (Options.Partitions) takes a
//     re-keyed table's inputs from every source partition, which it reads,
//     or which the shards that own them hand it (exchange.go). A KTable
//     groupBy (regroup.go) and a cogroup (cogroup.go) are tables with
//     checks of their own.
//  4. the joins: each KTable-KTable join chain's output against the
//     tables' final states (join.go); each stream-table join's records
//     (streamjoin.go); each copy (copies.go).
//  5. the report: the findings in order, each vanished input's lineage
//     (lineage.go), the timeline, the signatures of known Kafka Streams
//     bugs (signature.go).
//
// # The types
//
// Pipeline (pipeline.go) is what the app does, built from a resolved spec
// by FromPlan (plan.go): tables with their steps, key and reducer, the
// joins, stream joins and copies. run holds one audit's state, and
// tableState one table's while it is checked: its keys' inputs and
// histories, its copies, what it proved. Reads go through read.go: each
// partition's records decoded by a pool of readers ahead of the audit,
// walked through its ledger (audit/ledger), which says each record's fate
// (committed, aborted, open) and the partition's offsets.
//
// Findings are values (audit.Finding); what the evidence cannot settle is
// missing evidence, never a loss, and makes the verdict incomplete.
package reconcile
