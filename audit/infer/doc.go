// Package infer checks a spec against the evidence and drafts one from it.
//
// Everything kaudit concludes rests on the spec: what select_key, the
// reducers and the joiners do. The evidence says much of it: the
// repartition copies show each table's source and selected key, the
// changelog histories show the reducer, the output shows the joiner.
//
// CheckFields (run before judging) refuses a spec whose expressions name
// fields the topics' values do not have. CheckTable and CheckJoin measure
// how many keys' histories a table's reducer (a join's value) explains
// against the alternatives, and say when the table or join must not be
// judged. Draft infers a whole spec.
package infer
