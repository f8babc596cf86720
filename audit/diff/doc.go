// Package diff is kaudit's audit use case: given a source of evidence and
// the options a caller chose, it resolves what to check (the spec on the
// topology; without one, the spec drafted from the evidence
// (audit/draft's Draft.Spec), else the keyless checks on the topics' roles),
// builds the decoder, checks the spec against the evidence, runs the
// engine (audit/reconcile) and adds what the engine does not see: the
// source's own problems, config risks, the state dir's checkpoints, a
// baseline capture's records, and notes on what could not be known. The
// report it returns is finished once; rendering it is the caller's.
//
// Errors that are the caller's (a bad spec, a missing file) wrap
// audit.UsageError; evidence that could not be read at all wraps
// audit.NotRunError; anything else that could not be judged is in the
// report's missing evidence.
package diff
