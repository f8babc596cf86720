package codec

import (
	"encoding/base64"
	"encoding/json"
	"unsafe"
)

// The decoder builds each payload's strings in one chunk of bytes: the text
// (the payload's copy, then formatted numbers, timestamps, base64) grows
// up from the start, and the string headers that the value's interfaces
// point to grow down from the end. One small allocation per payload, not
// two per field.
//
// A chunk is a []byte, which the garbage collector does not scan, yet it
// holds string headers, which are pointers. That is sound because every
// header points into its own chunk (box copies a string from elsewhere in
// first): whatever reaches a header reaches, through the same interior
// pointer, the chunk and so the text. The headers are written as plain
// words, so no write barrier runs for them. Chunk bytes are only ever
// appended, never rewritten, so the strings made from them are immutable
// as Go requires.

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
	arenaChunk = 512 // bytes of a chunk after the first
	arenaFirst = 96  // room for text beyond the payload's in the first
	headerSize = int(unsafe.Sizeof(""))
)

// box returns s as an interface of the type typ (string or json.Number),
// its header stored in the current chunk, and s copied there first unless
// it already lies in it.
func (d *avroDecoder) box(typ unsafe.Pointer, s string) any {
	if len(s) == 0 {
		if typ == numberType {
			return json.Number("")
		}
		return ""
	}
	if !d.owns(s) || d.hdr-headerSize < len(d.arena) {
		d.reserve(len(s))
		start := len(d.arena)
		d.arena = append(d.arena, s...)
		s = d.since(start)
	}
	d.hdr -= headerSize
	d.arena = d.arena[:len(d.arena):d.hdr]
	h := unsafe.Pointer(&d.chunk[d.hdr])
	*(*[2]uintptr)(h) = [2]uintptr{uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(len(s))}
	var v any
	e := (*eface)(unsafe.Pointer(&v))
	e.typ = typ
	e.data = h
	return v
}

// boxText boxes the chunk's text from start on, appended after a reserve
// that left room for it and its header, as an interface of the type typ.
func (d *avroDecoder) boxText(typ unsafe.Pointer, start int) any {
	if start == len(d.arena) {
		return d.box(typ, "")
	}
	if unsafe.SliceData(d.arena) != unsafe.SliceData(d.chunk) {
		panic("codec: text outgrew its reserve") // a reserve too small: a bug
	}
	d.hdr -= headerSize
	h := unsafe.Pointer(&d.chunk[d.hdr])
	*(*[2]uintptr)(h) = [2]uintptr{uintptr(unsafe.Pointer(&d.arena[start])), uintptr(len(d.arena) - start)}
	d.arena = d.arena[:len(d.arena):d.hdr]
	var v any
	e := (*eface)(unsafe.Pointer(&v))
	e.typ = typ
	e.data = h
	return v
}

// owns reports whether s lies in the text of the current chunk.
func (d *avroDecoder) owns(s string) bool {
	if len(d.chunk) == 0 {
		return false
	}
	p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	base := uintptr(unsafe.Pointer(&d.chunk[0]))
	return p >= base && p+uintptr(len(s)) <= base+uintptr(len(d.arena))
}

// reserve makes room in the current chunk for n more bytes of text and the
// header of the string they make, without moving the bytes strings
// already point to: when the chunk is full it starts another.
func (d *avroDecoder) reserve(n int) {
	if d.hdr-headerSize-len(d.arena) < n {
		if d.pick != 0 {
			d.newChunk(0, n+headerSize) // one field's value: no room for more
			return
		}
		d.newChunk(0, max(arenaChunk, n+headerSize))
	}
}

// newChunk starts a chunk of at least size bytes whose first text bytes
// are already in use (the payload's, for the first chunk).
func (d *avroDecoder) newChunk(text, size int) {
	size = (size + headerSize - 1) &^ (headerSize - 1) // headers stay aligned
	d.chunk = make([]byte, size)
	d.hdr = size
	d.arena = d.chunk[:text:size]
}

// since returns the chunk's text from start on as a string.
func (d *avroDecoder) since(start int) string {
	if start == len(d.arena) {
		return ""
	}
	return unsafe.String(&d.arena[start], len(d.arena)-start)
}

// setPayload copies the payload into the first chunk, sized for it, some
// formatted text and the headers of strs strings: strings of the value
// are slices of it.
func (d *avroDecoder) setPayload(b []byte, strs int) {
	d.b = b
	d.newChunk(len(b), len(b)+arenaFirst+strs*headerSize)
	copy(d.chunk, b)
	if len(b) > 0 {
		d.s = unsafe.String(&d.chunk[0], len(b))
	}
}

// viewPayload reads b in place, for text, which keeps no
// string beyond the call.
func (d *avroDecoder) viewPayload(b []byte) {
	d.b = b
	if len(b) > 0 {
		d.s = unsafe.String(&b[0], len(b))
	}
}

// numberValue boxes an integer as a json.Number.
func (d *avroDecoder) numberValue(v int64) any {
	if v >= 0 && v < int64(len(smallNums)) {
		return smallNums[v]
	}
	d.reserve(20)
	start := len(d.arena)
	d.arena = appendInt(d.arena, v)
	return d.boxText(numberType, start)
}

// boxString returns b as a string in an interface, its text and its header
// in one chunk of their own: one allocation where string(b) boxed takes
// two, for the keys and plain values Decode reads for every record.
func boxString(b []byte) any {
	if len(b) == 0 {
		return ""
	}
	chunk := make([]byte, headerSize+len(b))
	copy(chunk[headerSize:], b)
	return boxChunk(chunk)
}

// boxBase64 returns the standard base64 text of b as a string in an
// interface, as boxString does.
func boxBase64(b []byte) any {
	if len(b) == 0 {
		return ""
	}
	chunk := make([]byte, headerSize+base64.StdEncoding.EncodedLen(len(b)))
	base64.StdEncoding.Encode(chunk[headerSize:], b)
	return boxChunk(chunk)
}

// boxChunk boxes the text of a chunk after its first headerSize bytes,
// which hold the string's header.
func boxChunk(chunk []byte) any {
	h := unsafe.Pointer(&chunk[0])
	*(*[2]uintptr)(h) = [2]uintptr{uintptr(unsafe.Pointer(&chunk[headerSize])), uintptr(len(chunk) - headerSize)}
	var v any
	e := (*eface)(unsafe.Pointer(&v))
	e.typ = stringType
	e.data = h
	return v
}
