package codec

import (
	"errors"
	"strconv"
	"strings"
)

// Sentinel errors. A *DecodeError wraps one of the first four (or a parse
// error); a *RegistryError wraps ErrRegistryUnavailable.
var (
	// ErrUnknownSchema: the schema id is not in the registry (404) nor in
	// the offline schema set.
	ErrUnknownSchema = errors.New("unknown schema")
	// ErrNotFramed: an avro payload does not start with Confluent's magic
	// byte 0.
	ErrNotFramed = errors.New("not confluent-framed")
	// ErrTruncated: the payload ends before the value does.
	ErrTruncated = errors.New("truncated payload")
	// ErrBadSchema: the schema exists but cannot be used (it does not
	// parse, its references do not resolve, or it is not an Avro or JSON
	// schema).
	ErrBadSchema = errors.New("unusable schema")
	// ErrRegistryUnavailable: the Schema Registry is down, timed out, or
	// refused the request (401, 403, 5xx, an answer that is not its JSON).
	// It is about the registry, not the record: the run is incomplete.
	// A *DecodeError about an unknown schema id wraps it too: without the
	// writer's schema no record of that id can be read, so the schema is
	// missing evidence (one entry per schema id), not a fault of each
	// record.
	ErrRegistryUnavailable = errors.New("schema registry unavailable")
)

// DecodeError is a record that cannot be decoded: callers report it as an
// undecodable finding. SchemaID is -1 when the payload names none.
type DecodeError struct {
	Topic    string
	IsKey    bool
	SchemaID int32
	Reason   string
	Err      error
}

func (e *DecodeError) Error() string {
	var b strings.Builder
	b.WriteString("decode ")
	if e.IsKey {
		b.WriteString("key")
	} else {
		b.WriteString("value")
	}
	b.WriteString(" of ")
	b.WriteString(e.Topic)
	if e.SchemaID >= 0 {
		b.WriteString(" (schema id ")
		b.WriteString(strconv.Itoa(int(e.SchemaID)))
		b.WriteString(")")
	}
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause; for an unknown schema id, also
// ErrRegistryUnavailable (see there). The message names the topic, the
// side and the schema id, never the record: every record of one unknown
// id fails with the same text.
func (e *DecodeError) Unwrap() []error {
	switch {
	case e.Err == nil:
		return nil
	case errors.Is(e.Err, ErrUnknownSchema):
		return []error{e.Err, ErrRegistryUnavailable}
	}
	return []error{e.Err}
}

// RegistryError is a Schema Registry that could not answer. URL is the
// request URL without credentials; Status is the HTTP status, 0 when no
// answer came (connection refused, timeout). It never holds a password
// or an Authorization header. errors.Is(err, ErrRegistryUnavailable)
// holds for every RegistryError.
type RegistryError struct {
	URL    string
	Status int
	Err    error // the transport error, or nil
	Reason string
}

func (e *RegistryError) Error() string {
	var b strings.Builder
	b.WriteString("schema registry ")
	b.WriteString(e.URL)
	if e.Status != 0 {
		b.WriteString(": HTTP ")
		b.WriteString(strconv.Itoa(e.Status))
	}
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns ErrRegistryUnavailable and the transport error.
func (e *RegistryError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrRegistryUnavailable}
	}
	return []error{ErrRegistryUnavailable, e.Err}
}
