package applog

// Whose a line is: the Streams app, consumer group or client its entry
// names.

import (
	"bytes"
	"slices"
)

// Tie says whether a line is an app's.
type Tie int

const (
	// Untied: the entry names no group, Streams client or thread (Kafka's
	// layout has no thread: a Streams processor's own lines, as the
	// expired-window one, name nothing): whose it is is not known.
	Untied Tie = iota
	// Tied: the entry names the app, and nothing else.
	Tied
	// Other: the entry names another group or Streams app (or the app and
	// another at once).
	Other
)

// Broker reports whether the kind is a broker's line, about a
// topic-partition, not an app's: it is tied to the audit by its
// topic-partition, never by a client.
func (k Kind) Broker() bool {
	switch k {
	case LogStartIncremented, SegmentDeleted, Truncated, Cleaned, TxnRolledBack, UncleanElection:
		return true
	}
	return false
}

// Tie says whether the event's entry is app's (its application.id): its
// consumer's group id is app ("[Consumer clientId=…, groupId=app]"), or a
// Streams client id it names is app's own, app-<processId UUID> (the
// client's "stream-client [app-<uuid>]", its threads' "stream-thread
// [app-<uuid>-StreamThread-1]" and thread names, its clients'
// "[Consumer clientId=app-<uuid>-StreamThread-1-consumer, …]",
// "[Producer clientId=app-<uuid>-StreamThread-1-producer, …]"), and
// nothing names another group or app.
func (e *Event) Tie(app string) Tie {
	ours, theirs := false, false
	if e.Group != "" {
		ours, theirs = e.Group == app, e.Group != app
	}
	for _, c := range e.Clients {
		if len(c) == len(app)+1+uuidLen && c[:len(app)] == app && c[len(app)] == '-' {
			ours = true
		} else {
			theirs = true
		}
	}
	switch {
	case theirs:
		return Other
	case ours:
		return Tied
	}
	return Untied
}

// uuidLen is the length of a UUID as Java prints it (8-4-4-4-12 hex).
const uuidLen = 36

// isUUID reports whether b starts with a UUID.
func isUUID(b []byte) bool {
	if len(b) < uuidLen {
		return false
	}
	for i, c := range b[:uuidLen] {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

func isIDByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

var groupIDKey = []byte("groupId=")

// identify reads who wrote an entry from its head line: the consumer's
// group id ("groupId=G" of the client's log prefix; "null" is none, the
// restore consumer's) and the Streams client ids it names (each
// "<application.id>-<processId UUID>" that starts a client id, thread name
// or transactional id: the client's, its threads', its clients').
func identify(head []byte) (group string, clients []string) {
	if i := bytes.Index(head, groupIDKey); i >= 0 {
		v := head[i+len(groupIDKey):]
		j := 0
		for j < len(v) && v[j] != ',' && v[j] != ']' && !isSpace(v[j]) {
			j++
		}
		if g := string(v[:j]); g != "null" {
			group = g
		}
	}
	for i := 0; i < len(head); {
		if !isIDByte(head[i]) {
			i++
			continue
		}
		// a token of id bytes: the first UUID after a dash in it ends a
		// Streams client id (a later one is a member id's own)
		j := i
		for j < len(head) && isIDByte(head[j]) {
			j++
		}
		for k := i + 1; k+uuidLen <= j; k++ {
			if head[k-1] == '-' && isUUID(head[k:]) && (k+uuidLen == j || head[k+uuidLen] == '-') {
				if k-1 > i {
					c := string(head[i : k+uuidLen])
					if !slices.Contains(clients, c) {
						clients = append(clients, c)
					}
				}
				break
			}
		}
		i = j
	}
	return group, clients
}
