package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/segment"
)

// rehash makes the manifest agree with the files as they are now, the way
// someone editing a bundle would.
func rehash(t *testing.T, dir string) {
	t.Helper()
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range m.Files {
		p := filepath.Join(dir, f.Path)
		if info, err := os.Stat(p); err != nil || !info.Mode().IsRegular() {
			m.Files[i].Size = 1 << 20 // a device: the size it would be read to
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		sum := sha256.Sum256(b)
		m.Files[i].Size, m.Files[i].SHA256 = int64(len(b)), hex.EncodeToString(sum[:])
	}
	b, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// damaged reports how opening and reading tp0 of dir goes: the problems
// and the read error, within a deadline.
func damaged(t *testing.T, dir string) ([]audit.Finding, []audit.Record, error) {
	t.Helper()
	type result struct {
		p    []audit.Finding
		recs []audit.Record
		err  error
	}
	done := make(chan result, 1)
	go func() {
		s, err := OpenContext(t.Context(), dir)
		if err != nil {
			done <- result{err: err}
			return
		}
		recs, err := readAll(t.Context(), s, tp0)
		done <- result{s.Problems(), recs, err}
	}()
	select {
	case r := <-done:
		return r.p, r.recs, r.err
	case <-time.After(3 * time.Second):
		t.Fatal("opening and reading the bundle did not end")
	}
	return nil, nil, nil
}

func segmentOf(t *testing.T, dir string) (string, *Manifest) {
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range m.Files {
		if strings.HasPrefix(f.Path, partitionDir(tp0)+"/") {
			return f.Path, m
		}
	}
	t.Fatal("no segment of", tp0)
	return "", nil
}

// TestDamagedBundle: damage that the hashes cannot show (a bundle edited
// and rehashed, a symlink) makes the partition unreadable, naming the
// file; it never reads as missing offsets (an offset-gap) or hangs.
func TestDamagedBundle(t *testing.T) {
	outside := t.TempDir()
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir, rel string)
	}{
		{"last batch crc, rehashed", func(t *testing.T, dir, rel string) {
			p := filepath.Join(dir, rel)
			b, _ := os.ReadFile(p)
			b[len(b)-1] ^= 1
			os.WriteFile(p, b, 0o644)
			rehash(t, dir)
		}},
		{"first batch crc, rehashed", func(t *testing.T, dir, rel string) {
			p := filepath.Join(dir, rel)
			b, _ := os.ReadFile(p)
			b[70] ^= 1
			os.WriteFile(p, b, 0o644)
			rehash(t, dir)
		}},
		{"log is a symlink to /dev/zero", func(t *testing.T, dir, rel string) {
			p := filepath.Join(dir, rel)
			os.Remove(p)
			os.Symlink("/dev/zero", p)
		}},
		{"log is a symlink to /dev/urandom, rehashed", func(t *testing.T, dir, rel string) {
			p := filepath.Join(dir, rel)
			os.Remove(p)
			os.Symlink("/dev/urandom", p)
			rehash(t, dir)
		}},
		{"log is a symlink out of the bundle, same bytes", func(t *testing.T, dir, rel string) {
			p := filepath.Join(dir, rel)
			b, _ := os.ReadFile(p)
			q := filepath.Join(outside, strings.ReplaceAll(dir, "/", "_"))
			os.WriteFile(q, b, 0o644)
			os.Remove(p)
			os.Symlink(q, p)
		}},
		{"partition dir is a symlink out of the bundle", func(t *testing.T, dir, rel string) {
			pd := filepath.Join(dir, filepath.Dir(rel))
			q := filepath.Join(outside, strings.ReplaceAll(dir, "/", "_")+"-dir")
			os.Rename(pd, q)
			os.Symlink(q, pd)
		}},
		{"hw lowered below what was captured", func(t *testing.T, dir, rel string) {
			m, _ := ReadManifest(dir)
			for i := range m.Partitions {
				if p := &m.Partitions[i]; p.TP() == tp0 {
					p.HW, p.LSO = p.Next-2, p.Next-2
				}
			}
			b, _ := json.Marshal(m)
			os.WriteFile(filepath.Join(dir, ManifestFile), b, 0o644)
		}},
		{"partition dir gone, files dropped from the manifest", func(t *testing.T, dir, rel string) {
			os.RemoveAll(filepath.Join(dir, filepath.Dir(rel)))
			m, _ := ReadManifest(dir)
			m.Files = slices.DeleteFunc(m.Files, func(f File) bool { return f.Path == rel })
			b, _ := json.Marshal(m)
			os.WriteFile(filepath.Join(dir, ManifestFile), b, 0o644)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			capture(t, fixtureSource(t), CaptureOptions{Dir: dir, AppID: "conf"})
			rel, _ := segmentOf(t, dir)
			tc.damage(t, dir, rel)
			problems, _, err := damaged(t, dir)
			named := false
			for _, f := range problems {
				if f.Cause != audit.CauseUnreadable || f.Topic != tp0.Topic || f.Partition != tp0.Partition {
					t.Errorf("problem %+v, want only unreadable findings on %s", f, tp0)
				}
				named = named || strings.Contains(f.Detail, partitionDir(tp0))
			}
			if err == nil {
				t.Fatalf("reading %s succeeded (problems %+v); want an error", tp0, problems)
			}
			if !errors.Is(err, audit.ErrCorrupt) {
				t.Fatalf("read error %v does not wrap %v", err, audit.ErrCorrupt)
			}
			if !named && !strings.Contains(err.Error(), partitionDir(tp0)) {
				t.Fatalf("neither the problems %+v nor the error %v name %s", problems, err, partitionDir(tp0))
			}
		})
	}
	t.Run("manifest is a symlink to /dev/zero", func(t *testing.T) {
		dir := t.TempDir()
		os.Symlink("/dev/zero", filepath.Join(dir, ManifestFile))
		if _, _, err := damaged(t, dir); !errors.Is(err, audit.ErrCorrupt) || !strings.Contains(err.Error(), "symlink") {
			t.Fatalf("got %v, want a symlink refused as %v", err, audit.ErrCorrupt)
		}
	})
	t.Run("manifest is a named pipe", func(t *testing.T) {
		dir := t.TempDir()
		if err := syscall.Mkfifo(filepath.Join(dir, ManifestFile), 0o600); err != nil {
			t.Skip(err)
		}
		if _, _, err := damaged(t, dir); !errors.Is(err, segment.ErrNotRegular) {
			t.Fatalf("got %v, want %v", err, segment.ErrNotRegular)
		}
	})
	t.Run("manifest is a symlink to a bundle's manifest outside", func(t *testing.T) {
		dir, other := t.TempDir(), t.TempDir()
		capture(t, fixtureSource(t), CaptureOptions{Dir: dir, AppID: "conf"})
		capture(t, fixtureSource(t), CaptureOptions{Dir: other, AppID: "conf"})
		os.Remove(filepath.Join(dir, ManifestFile))
		os.Symlink(filepath.Join(other, ManifestFile), filepath.Join(dir, ManifestFile))
		if _, _, err := damaged(t, dir); !errors.Is(err, audit.ErrCorrupt) || !strings.Contains(err.Error(), "symlink") {
			t.Fatalf("got %v, want the symlink refused", err)
		}
	})
}

// TestFlippedBytes flips every byte of a segment in turn, rehashed: the
// partition reads as before, or is unreadable (a problem or an error
// wrapping audit.ErrCorrupt); it never reads silently as other offsets.
func TestFlippedBytes(t *testing.T) {
	base := t.TempDir()
	capture(t, fixtureSource(t), CaptureOptions{Dir: base, AppID: "conf"})
	rel, _ := segmentOf(t, base)
	orig, err := os.ReadFile(filepath.Join(base, rel))
	if err != nil {
		t.Fatal(err)
	}
	want, err := readAll(t.Context(), mustOpen(t, base), tp0)
	if err != nil {
		t.Fatal(err)
	}
	offsets := func(recs []audit.Record) []int64 {
		var out []int64
		for _, r := range recs {
			out = append(out, r.Offset)
		}
		return out
	}
	counts := map[string]int{}
	for i := range orig {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(base)); err != nil {
			t.Fatal(err)
		}
		b := slices.Clone(orig)
		b[i] ^= 0x10
		os.WriteFile(filepath.Join(dir, rel), b, 0o644)
		rehash(t, dir)
		problems, got, err := damaged(t, dir)
		switch {
		case err != nil && errors.Is(err, audit.ErrCorrupt):
			counts["unreadable"]++
		case err != nil:
			t.Errorf("byte %d: error %v does not wrap %v", i, err, audit.ErrCorrupt)
		case len(problems) > 0:
			t.Errorf("byte %d: problems %+v but the partition reads", i, problems)
		case slices.Equal(offsets(got), offsets(want)):
			counts["same offsets"]++
		default:
			counts["other offsets"]++
			t.Errorf("byte %d: offsets %v, want %v or an error", i, offsets(got), offsets(want))
		}
	}
	t.Logf("%d bytes flipped: %v", len(orig), counts)
}
