package codec

import (
	"encoding/json"
	"strconv"
	"unsafe"
)

// The decoder builds each payload's strings in one byte arena and boxes
// them into interfaces from one slab of string headers, instead of two
// small allocations per field: at ten fields a record this halves the
// time spent decoding. Arena bytes are only ever appended, never
// rewritten, so the strings made from them are immutable as Go requires.

// eface is the runtime layout of an interface holding a value.
type eface struct {
	typ, data unsafe.Pointer
}

func typeOf(v any) unsafe.Pointer { return (*eface)(unsafe.Pointer(&v)).typ }

var (
	stringType = typeOf("")
	numberType = typeOf(json.Number(""))
)

const (
	arenaChunk = 256 // bytes of text per arena after the first
	arenaFirst = 96  // room for text beyond the payload's in the first
	slabChunk  = 16
)

// box returns s as an interface of the type typ (string or json.Number),
// its header stored in the decoder's slab.
func (d *avroDecoder) box(typ unsafe.Pointer, s string) any {
	if len(s) == 0 {
		if typ == numberType {
			return json.Number("")
		}
		return ""
	}
	if len(d.slab) == cap(d.slab) {
		n := slabChunk
		if d.slab == nil && d.firstSlab > 0 {
			n = d.firstSlab
		}
		d.slab = make([]string, 0, n)
	}
	d.slab = append(d.slab, s)
	var v any
	e := (*eface)(unsafe.Pointer(&v))
	e.typ = typ
	e.data = unsafe.Pointer(&d.slab[len(d.slab)-1])
	return v
}

// reserve makes room for n more arena bytes without moving the ones
// strings already point to.
func (d *avroDecoder) reserve(n int) {
	if cap(d.arena)-len(d.arena) < n {
		d.arena = make([]byte, 0, max(arenaChunk, n))
	}
}

// since returns the arena bytes from start on as a string.
func (d *avroDecoder) since(start int) string {
	if start == len(d.arena) {
		return ""
	}
	return unsafe.String(&d.arena[start], len(d.arena)-start)
}

// setPayload copies the payload into the arena: strings of the value are
// slices of it.
func (d *avroDecoder) setPayload(b []byte) {
	d.b = b
	d.arena = make([]byte, len(b), len(b)+arenaFirst)
	copy(d.arena, b)
	if len(b) > 0 {
		d.s = unsafe.String(&d.arena[0], len(b))
	}
}

// numberValue boxes an integer as a json.Number.
func (d *avroDecoder) numberValue(v int64) any {
	if v >= 0 && v < int64(len(smallNums)) {
		return smallNums[v]
	}
	d.reserve(20)
	start := len(d.arena)
	d.arena = strconv.AppendInt(d.arena, v, 10)
	return d.box(numberType, d.since(start))
}
