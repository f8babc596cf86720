package audit

// Inferred summarises a spec kaudit inferred from the evidence (kaudit
// diff without --spec): its hash, the topology it was drawn on, and each
// table and join with what the evidence settled and whether it was
// judged. The spec itself, each guess with its evidence, is
// Report.InferredSpec.
type Inferred struct {
	SHA256 string `json:"sha256"`
	// Topology says which describe() text the inference read: "--topology
	// FILE", "the capture's", or "none" (the node numbers, the topics and
	// their records only).
	Topology  string          `json:"topology"`
	Guesses   int             `json:"guesses"`
	Unsettled int             `json:"unsettled"`
	Tables    []InferredTable `json:"tables,omitempty"`
	Joins     []InferredJoin  `json:"joins,omitempty"`
}

// InferredTable is one table of an inferred spec.
type InferredTable struct {
	Name      string   `json:"name"`
	Source    string   `json:"source,omitempty"`
	Steps     []string `json:"steps,omitempty"`
	SelectKey string   `json:"select_key,omitempty"`
	Reduce    string   `json:"reduce,omitempty"`
	Window    string   `json:"window,omitempty"`
	Output    string   `json:"output,omitempty"`
	// Unjudged says why the table was not judged, "" when it was; Unsure
	// names the filters whose predicate the evidence did not settle (the
	// table judged, its inputs without a copy not).
	Unjudged string `json:"unjudged,omitempty"`
	Unsure   string `json:"unsure,omitempty"`
	// Guesses are the table's guesses, each with what it rests on: the
	// fields above are their values.
	Guesses []InferredGuess `json:"guesses,omitempty"`
}

// InferredGuess is one guess of an inferred spec: the spec field it
// fills (source, steps[0], select_key, window, reduce, output…), its
// value and what it rests on, and, where counted, how many records
// (copies, keys, windows) it explains of how many; or, where the
// evidence does not settle it, why (Unknown).
type InferredGuess struct {
	Field     string `json:"field"`
	Value     string `json:"value,omitempty"`
	Evidence  string `json:"evidence,omitempty"`
	Explained int    `json:"explained,omitempty"`
	Of        int    `json:"of,omitempty"`
	Unknown   string `json:"unknown,omitempty"`
}

// InferredJoin is one join of an inferred spec.
type InferredJoin struct {
	Output   string   `json:"output"`
	Left     string   `json:"left"`
	Right    []string `json:"right,omitempty"`
	Type     string   `json:"type,omitempty"`
	Value    string   `json:"value,omitempty"`
	Unjudged string   `json:"unjudged,omitempty"`
	// Guesses are the join's output, type and value, each with what it
	// rests on.
	Guesses []InferredGuess `json:"guesses,omitempty"`
}
