// Package applog reads the log lines Kafka 3.x writes that are evidence for
// an audit: a Kafka Streams app's log (its consumer resetting an offset
// that was out of range, a task found corrupted, a cache that failed to
// flush, BufferExhaustedException, fencing and task migration, a changelog
// restored, state transitions, a record skipped for an expired window) and a broker's (a partition's log start
// moved, and why; a segment deleted by retention; a replica truncated;
// the log cleaner cleaning a partition; a transaction rolled back by its
// timeout).
//
// ReadFile reads one file, plain or gzip, and Parse a stream; each returns
// the Events it found, each with its file and line number, time, level,
// kind, task, topic-partition, offsets and the raw line. A log entry's
// continuation lines (an exception's message and stack, indented or not
// headed by a timestamp or level) belong to the entry: a pattern found on
// one of them is an event with the entry's time and level and its own
// line number.
//
// Reading is bounded: a line at MaxLineBytes, a file at Options.MaxBytes
// (inflated), a gzip file at MaxInflate times its size, the events kept at
// Options.MaxKept bytes of memory and MaxEvents; Options.Keep chooses the
// events kept as they are read, the others are only counted. A run of
// empty lines is counted, not parsed line by line. A last line without its
// newline may have been cut mid-write (its numbers with it): no event is
// read from it. Damage is no error: a gzip stream that ends early, fails
// its checksum or does not inflate makes the Log damaged (Log.Cut says
// where), and only the events of the gzip members whose checksum matched
// are kept: a damaged deflate stream can inflate into plausible lines with
// wrong numbers before the damage shows, and a stream cut short cannot be
// told from one corrupted.
//
// Timestamps come in the common log4j and logback layouts: Kafka's
// "[2026-11-30 12:00:00,123]", ISO-8601 with a T and a zone
// ("2026-11-30T12:00:00.123+01:00", "…Z"), a date and time without zone
// ("2026-11-30 12:00:00.123"), and logback's and slf4j-simple's time of
// day ("12:00:00.123 [thread] INFO …"), dated with Options.Day when given
// (else the event has no time). A line with no timestamp at all (a layout
// without %d, as in "[ERROR] [thread] [class]: …") still gives its events,
// without a time.
//
// An event's time is a Stamp: a point where its zone is known, an interval
// where it is not. Kafka's layout writes the writer's local time without a
// zone, so such a time is read in Options.Location (--log-timezone: an IANA
// zone, whose daylight saving time makes the hour a clock sets back an
// interval of an hour), else by the file's own start-up lines (every broker
// and client logs "Kafka startTimeMs: N" as it starts, from
// AppInfoParser: the line's time minus N is the writer's UTC offset then,
// exact between two such lines less than SameOffsetFor apart that agree,
// DSTShift either side elsewhere), else it is not known: an interval of
// ±UnknownZone (14 h).
//
// Logs are optional evidence: an audit never reads the absence of a line
// as proof of anything (a log is rotated, filtered by level, or of another
// instance). The exact texts matched are in patterns.go, with the Kafka
// class that writes each.
package applog
