package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// The damaged bundles of issue AF: for every segment of a bundle (each
// partition of each topic, __consumer_offsets too), one damage: cut inside
// a batch or at a batch boundary, emptied, a CRC-covered byte or the CRC
// flipped, the file removed, listed twice, or overlapped by a copy listed
// as a later segment; each with and without the manifest rehashed (every
// file's size and sha256 and every partition's bytes made to agree with
// the files, as someone editing a bundle would: only the offsets and the
// batches' own checks can tell then). 30 per segment. Every one is damage
// the bundle shows, so a run that says nothing of it is wrong even when
// its verdict is the unmutated run's (mutation.strict).

// damageKinds are the damages of one segment's bytes.
var damageKinds = []string{
	"cut-mid-first", "cut-mid-middle", "cut-mid-last", // inside a batch
	"cut-boundary-middle", "cut-boundary-last", // at a batch boundary: whole batches missing (the last: a COMMIT marker)
	"emptied",
	"flip-record-first", "flip-record-middle", "flip-record-last", // a CRC-covered byte
	"flip-crc-first", "flip-crc-middle", "flip-crc-last", // the CRC itself
}

// damagedPerSegment is how many damaged bundles one segment gives.
const damagedPerSegment = 2 * (12 + 3)

// damagedBundles makes the damaged bundles of a snapshot target's fixture.
func damagedBundles(t *target, fx *fixture) []mutation {
	var ms []mutation
	add := func(m mutation) {
		m.target, m.class, m.strict, m.seq = t, classEvidence, true, len(ms)/2
		m.kind = "damaged " + m.kind
		agreed := m
		agreed.kind += "+rehash"
		agreed.desc += ", manifest rehashed"
		apply := m.apply
		agreed.apply = func(d, outside string) error {
			if err := apply(d, outside); err != nil {
				return err
			}
			return agree(d)
		}
		ms = append(ms, m, agreed)
	}
	for _, file := range slices.Sorted(slices.Values(fx.logs)) {
		orig := fx.data[file]
		spans := batchesOf(orig)
		idx := map[string]int{"first": 0, "middle": len(spans) / 2, "last": len(spans) - 1}
		for _, kind := range damageKinds {
			m := mutation{kind: kind, file: file}
			what, pos, _ := strings.Cut(strings.Replace(kind, "-", "_", 1), "-")
			bi := idx[pos]
			s := spans[bi]
			switch what {
			case "cut_mid":
				at := s.start + (s.end-s.start)/2
				m.desc = fmt.Sprintf("cut at byte %d (inside batch %d of %d)", at, bi, len(spans))
				m.apply = rewrite(file, orig, func(b []byte) []byte { return b[:at] })
			case "cut_boundary":
				m.desc = fmt.Sprintf("cut at byte %d (batches %d-%d of %d gone)", s.start, bi, len(spans)-1, len(spans))
				m.apply = rewrite(file, orig, func(b []byte) []byte { return b[:s.start] })
			case "emptied":
				m.desc = "emptied"
				m.apply = rewrite(file, orig, func([]byte) []byte { return nil })
			case "flip_record":
				at := s.start + 21 + (s.end-s.start-21)/2
				m.desc = fmt.Sprintf("batch %d of %d byte %d ^0x5a (CRC-covered)", bi, len(spans), at-s.start)
				m.apply = rewrite(file, orig, flipAt(at, 0x5a))
			case "flip_crc":
				m.desc = fmt.Sprintf("batch %d of %d CRC byte 0 ^0xff", bi, len(spans))
				m.apply = rewrite(file, orig, flipAt(s.start+17, 0xff))
			}
			add(m)
		}
		add(mutation{kind: "removed", file: file, desc: "removed",
			apply: func(d, _ string) error { return os.Remove(filepath.Join(d, filepath.FromSlash(file))) }})
		add(mutation{kind: "listed-twice", file: file, desc: "listed twice in the manifest",
			apply: func(d, _ string) error {
				return editManifest(d, func(doc map[string]any) {
					files, _ := doc["files"].([]any)
					for i, f := range files {
						if f.(map[string]any)["path"] == filepath.ToSlash(file) {
							doc["files"] = slices.Insert(files, i+1, any(maps.Clone(f.(map[string]any))))
							return
						}
					}
				})
			}})
		add(overlapped(file, orig, spans))
	}
	return ms
}

// overlapped copies a segment as a later segment of its partition, named
// after the base offset of its middle batch plus one, and lists the copy
// with its size and sha256: two segments hold the same offsets.
func overlapped(file string, orig []byte, spans []batchSpan) mutation {
	s := spans[len(spans)/2]
	base := int64(0)
	for i := range 8 {
		base = base<<8 | int64(orig[s.start+i])
	}
	copyName := path.Join(path.Dir(filepath.ToSlash(file)), fmt.Sprintf("%020d.log", base+1))
	return mutation{kind: "listed-twice-overlapping", file: file,
		desc: "copied as " + copyName + " and listed: two segments hold the same offsets",
		apply: func(d, _ string) error {
			if err := os.WriteFile(filepath.Join(d, filepath.FromSlash(copyName)), orig, 0o644); err != nil {
				return err
			}
			sum := sha256.Sum256(orig)
			return editManifest(d, func(doc map[string]any) {
				files, _ := doc["files"].([]any)
				doc["files"] = append(files, map[string]any{"path": copyName, "size": len(orig), "sha256": hex.EncodeToString(sum[:])})
			})
		}}
}

// agree makes the manifest agree with the bundle's files: a removed file
// unlisted, every listed file's size and sha256 its own, every
// partition's bytes the sum of its listed files' sizes.
func agree(d string) error {
	return editManifest(d, func(doc map[string]any) {
		files, _ := doc["files"].([]any)
		files = slices.DeleteFunc(files, func(f any) bool {
			_, err := os.Stat(filepath.Join(d, filepath.FromSlash(f.(map[string]any)["path"].(string))))
			return err != nil
		})
		bytes := map[string]float64{}
		for _, f := range files {
			e := f.(map[string]any)
			p := e["path"].(string)
			b, err := os.ReadFile(filepath.Join(d, filepath.FromSlash(p)))
			if err != nil {
				continue
			}
			sum := sha256.Sum256(b)
			e["size"], e["sha256"] = len(b), hex.EncodeToString(sum[:])
			dir, _, _ := strings.Cut(p, "/")
			bytes[dir] += float64(len(b))
		}
		doc["files"] = files
		parts, _ := doc["partitions"].([]any)
		if cl, ok := doc["commit_log"].(map[string]any); ok {
			parts = append(slices.Clone(parts), cl)
		}
		for _, p := range parts {
			p := p.(map[string]any)
			dir := fmt.Sprintf("%v-%v", p["topic"], p["partition"])
			if _, ok := p["bytes"]; ok {
				p["bytes"] = bytes[dir]
			}
		}
	})
}

// editManifest rewrites the manifest.
func editManifest(d string, f func(doc map[string]any)) error {
	mp := filepath.Join(d, "manifest.json")
	b, err := os.ReadFile(mp)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return err
	}
	f(doc)
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(mp, out, 0o644)
}
