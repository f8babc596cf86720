// Package reconcile is kaudit's engine. Run rebuilds, from the committed
// source records below the group's committed offsets (the exactly-once cut),
// what the app's tables and join output must hold, compares that with the
// changelogs and the output topic, and attributes every vanished input to
// exactly one stage and one cause, with its evidence.
//
// The main types are Pipeline (what the app does: tables with their key
// selector and reducer, and the join chain), Options and the Report it
// returns (audit.Report).
package reconcile
