// Package report renders an audit.Report for people and machines.
//
// The main entry points are Render (dispatch on a format name), Markdown
// (the postmortem a team attaches to an incident), CSV, JSON, Table,
// Prom and TimelineSVG, all fed only by an audit.Report and an Options
// value. ReadJSON reads a report back; NewSince and Merge combine reports
// (for --baseline and kaudit merge). LedgerTable, LedgerJSON and LedgerCSV
// render `kaudit ledger` output from an audit.TopicLedger.
//
// Explain gives every audit.Cause its paragraph (from audit's CauseDoc,
// which the README's findings table is checked against), and KnownIssues
// maps causes to the Kafka bugs whose signature they match.
//
// TopologyTable and TxnsTable render `kaudit topology` and `kaudit txns`
// from the documents of audit/topology, audit/discovery and audit/txns:
// those are the only packages of kaudit besides audit it imports.
package report
