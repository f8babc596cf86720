// Package history finds, in a consumer group's commit history, every range
// of offsets its committed offset advanced over without the app having
// consumed it, and why: retention deleted it (the partition's log start
// passed the committed offset: retention-gap on a source topic,
// purged-before-commit on a repartition topic), or the offset was moved
// forward by hand (offsets-forward). It is the evidence that survives a
// restart: once the app has reset to the log start and committed past the
// hole, the log start is below the committed offset again and the cut
// alone looks clean.
//
// # What it reads
//
// Gather collects, once per audit, the group's audit.CommitHistory (any
// source that is an audit.CommitHistoryReader: live, a format 2 snapshot,
// broker log dirs) and the events of the app's and brokers' logs
// (audit/applog). Evidence.Analyze then judges one partition, given its
// role and its log start now; LogStarts adds earlier observations of the
// log start (a baseline capture or report). It is a pure function of
// those: no source is read.
//
// # How it decides
//
// A loss needs a moment when the partition's log start L was above the
// app's consumer position while the app resumed from there. The history
// gives the committed offsets and when each took effect (a transaction's
// at its COMMIT marker), the group's generations (who was in the group),
// the aborted commits; L is known only where something observed it: now,
// a broker's "Incremented log start offset to N due to …" line with its
// time, a baseline. A log start only grows, so an observation bounds it
// from below after it and from above before it.
//
// A log line's time is a point only where its zone is known (written with
// it, --log-timezone, or its file's start-up lines: applog.Stamp); else it
// is an interval, and an observation bounds the log start only at the
// times it surely precedes or follows: a comparison its interval does not
// settle proves nothing either way, and the range is left to the rules
// below (missing evidence, where nothing else settles it). A reset line
// is tied to two commits by its offsets; its time only rules it out, where
// it is surely outside them.
//
// For each commit C that moved the partition's committed offset past the
// highest offset M the group had committed before (the frontier: offsets
// below it were consumed once, whatever moved back since):
//
//   - Moved by hand: a plain commit made while the group had no member (a
//     generation record says so), or, in a group that commits in
//     transactions (exactly-once), a plain commit after its first
//     transactional one. [M, C) is offsets-forward, less the part the log
//     start had already passed (observed before C): that part is
//     retention-gap (purged-before-commit).
//   - Clean when L was at or below M at C's time (the smallest observation
//     at or after it, now at the latest, is ≤ M): nothing above the
//     committed offset was gone.
//   - Proven a skip when the app's log says its consumer found its
//     position out of range and reset ("Fetch position … is out of range
//     for partition …", "Resetting offset for partition … to position …")
//     between the two commits; or when L was observed above M at a time T
//     when the app could not have consumed those offsets: before the
//     commit of M took effect (it covers everything processed before it),
//     or while the group was empty and before it came back (its consumer
//     then resumed from the committed offset). The proven range is
//     [M, N); the part up to the next observation above it, where the
//     reset may have gone too, is missing evidence.
//   - A repartition partition is clean otherwise when no position reset
//     lies between the two commits: Kafka Streams purges a repartition
//     partition only up to offsets it has processed, so its own purges
//     never pass its consumer's position. Where the consumer may have
//     resumed from the committed offset (the two commits made by different
//     transactional producers or producer epochs: a restart, a fenced or
//     migrated task; without transactions, a rebalance), after an aborted
//     commit, or after the group's offset was deleted, and Kafka Streams before 3.7.2 goes on
//     purging what it processes while a rebalance holds its commits back
//     (KAFKA-17635, measured by the drill): missing evidence, unless
//     Evidence.StreamsPurgeFixed says the app's Streams purges committed
//     offsets only. A DeleteRecords by hand on a repartition topic is seen
//     only through the proofs above.
//   - A source partition is missing evidence otherwise: the log start
//     passed M at some time before now and nothing recorded whether it
//     was before the app read those offsets (the app restarted meanwhile,
//     or a running consumer lagged behind retention). A broker's log
//     (Incremented log start offset), the app's (Resetting offset) or a
//     capture taken before the restart decides it.
//
// Logs only ever prove: the absence of a line is no evidence (a log may be
// rotated, filtered by level, or another instance's), and a line that
// proves nothing is only cited.
//
// # The window
//
// Compaction keeps, for each partition, its last commit before the
// cleaner's last pass and every commit after: the history of a partition
// is whole from its first listed commit, and only what came before it is
// gone (Holes). Without Since the window starts at that first commit, the
// committed offset known at its start; a log start at or below it then
// rules out every skip by retention since. With Since before it and holes
// before it, the stretch between is compacted away: it is missing
// evidence unless the log start did not move over it (observations).
//
// # Calling it from the engine
//
//	ev, err := history.Gather(ctx, src, group, history.Logs{App: appLogs, Broker: brokerLogs, Budget: memoryBudget})
//	// per source or repartition partition, once its log start is known:
//	res := ev.Analyze(history.Partition{TP: tp, Role: history.Source, LogStart: logStart, Now: clock})
//	findings, missing, notes := res.Findings(), res.Missing(), res.Notes
//
// A history that cannot be read (a source that does not hold it, an ACL,
// a bundle captured before kaudit kept it) is a note, not missing
// evidence: the audit is then what it was before this package. A log that
// cannot be read whole (damaged, or past the bounds the memory budget sets:
// Logs) is missing evidence (Evidence.Missing), its lines read before the
// damage used where applog vouches for them.
package history
