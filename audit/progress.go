package audit

// Progress is told how far an audit's reading has come, for progress bars
// on a terminal. Roles are "source", "repartition", "changelog" and
// "output". Implementations must be safe for concurrent use.
type Progress interface {
	// Expect adds n records to what role will read.
	Expect(role string, n int64)
	// Read counts n more records read for role.
	Read(role string, n int64)
}
