package main

import (
	"bytes"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/report"
)

// decodeReport decodes a report kaudit printed with --format json, as
// kaudit merge and --baseline read it (key, expected and actual are JSON
// values there, unknown numbers null).
func decodeReport(b []byte, r *audit.Report) error {
	got, err := report.ReadJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	*r = *got
	return nil
}
