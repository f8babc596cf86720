package dest

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree is a bundle (an input folder), a spec (an input file), a report
// left from an earlier run, a symlink to the bundle's manifest and one
// to the bundle, and an empty folder for the outputs.
type tree struct{ root, bundle, manifest, spec, old, link, dirLink, out string }

func newTree(t *testing.T) tree {
	t.Helper()
	root := t.TempDir()
	tr := tree{root: root, bundle: filepath.Join(root, "bundle"), spec: filepath.Join(root, "kaudit.yaml"),
		old: filepath.Join(root, "out", "old.json"), link: filepath.Join(root, "out", "link.json"),
		dirLink: filepath.Join(root, "out", "bundle-link"), out: filepath.Join(root, "out")}
	tr.manifest = filepath.Join(tr.bundle, "manifest.json")
	for _, d := range []string{tr.bundle, tr.out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{tr.manifest, tr.spec, tr.old} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(tr.manifest, tr.link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(tr.bundle, tr.dirLink); err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestCheck holds every kind of path kaudit writes to the rule: never
// inside an input, never through a symlink, never over a file unasked,
// never into a folder that does not exist.
func TestCheck(t *testing.T) {
	tr := newTree(t)
	inputs := []string{tr.bundle, tr.spec, "", filepath.Join(tr.root, "not-there")}
	for _, tt := range []struct {
		name string
		p    Path
		want error // nil: allowed
	}{
		{"a new report", Path{Path: filepath.Join(tr.out, "r.json")}, nil},
		{"the bundle's manifest", Path{Path: tr.manifest, Force: true}, ErrInput},
		{"a new file in the bundle", Path{Path: filepath.Join(tr.bundle, "r.md")}, ErrInput},
		{"the spec", Path{Path: tr.spec, Force: true}, ErrInput},
		{"into the bundle through a symlinked folder", Path{Path: filepath.Join(tr.dirLink, "r.md")}, ErrInput},
		{"a symlink", Path{Path: tr.link, Force: true}, ErrSymlink},
		{"an existing report", Path{Path: tr.old}, ErrExists},
		{"an existing report, forced", Path{Path: tr.old, Force: true}, nil},
		{"a folder as a file", Path{Path: tr.out, Force: true}, ErrKind},
		{"a missing folder", Path{Path: filepath.Join(tr.out, "no", "r.json")}, ErrNoFolder},
		{"a file as a folder", Path{Path: filepath.Join(tr.old, "r.json")}, ErrNoFolder},
		{"a device", Path{Path: os.DevNull, Force: true}, ErrKind},
		{"spill: a folder", Path{Path: tr.out, Kind: Folder}, nil},
		{"spill: the parent of an input", Path{Path: tr.root, Kind: Folder}, nil},
		{"spill: the bundle", Path{Path: tr.bundle, Kind: Folder}, ErrInput},
		{"spill: a missing folder", Path{Path: filepath.Join(tr.out, "no"), Kind: Folder}, ErrNoFolder},
		{"spill: a file", Path{Path: tr.old, Kind: Folder}, ErrNoFolder},
		{"spill: a symlink to a folder", Path{Path: tr.dirLink, Kind: Folder}, ErrSymlink},
		{"capture: a new folder", Path{Path: filepath.Join(tr.out, "b"), Kind: NewFolder}, nil},
		{"capture: inside the bundle", Path{Path: filepath.Join(tr.bundle, "b"), Kind: NewFolder}, ErrInput},
		{"capture: above the bundle", Path{Path: tr.root, Kind: NewFolder}, ErrInput},
		{"capture: no parent", Path{Path: filepath.Join(tr.out, "no", "b"), Kind: NewFolder}, ErrNoFolder},
		{"capture: a file", Path{Path: tr.old, Kind: NewFolder}, ErrKind},
		{"no path", Path{}, ErrKind},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.p.Flag = "--output"
			err := Check([]Path{tt.p}, inputs)
			var r *Refused
			switch {
			case tt.want == nil && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != nil && !errors.Is(err, tt.want):
				t.Errorf("err = %v, want %v", err, tt.want)
			case err != nil && (!errors.As(err, &r) || !strings.HasPrefix(err.Error(), "--output ")):
				t.Errorf("err = %v: not a *Refused naming its flag", err)
			}
		})
	}
	t.Run("one path twice", func(t *testing.T) {
		p := filepath.Join(tr.out, "r.json")
		err := Check([]Path{{Flag: "--output", Path: p}, {Flag: "--save-spec", Path: p}}, nil)
		if !errors.Is(err, ErrTwice) {
			t.Errorf("err = %v, want %v", err, ErrTwice)
		}
		if err := Check([]Path{{Flag: "--spill-dir", Path: tr.out, Kind: Folder}, {Flag: "--exchange", Path: tr.out, Kind: Folder}}, nil); err != nil {
			t.Errorf("one folder for the spill and the exchange: %v", err)
		}
	})
	t.Run("a hard link to an input", func(t *testing.T) {
		p := filepath.Join(tr.out, "hard.yaml")
		if err := os.Link(tr.spec, p); err != nil {
			t.Skip(err)
		}
		if err := Check([]Path{{Path: p, Force: true}}, inputs); !errors.Is(err, ErrInput) {
			t.Errorf("err = %v, want %v", err, ErrInput)
		}
	})
}

// TestJoin: a name from a flag is one path element under its folder.
func TestJoin(t *testing.T) {
	for _, tt := range []struct {
		names []string
		ok    bool
	}{
		{[]string{"night-42"}, true},
		{[]string{"night-42", "3", "orders%2Fv1"}, true},
		{[]string{".."}, false},
		{[]string{"."}, false},
		{[]string{""}, false},
		{[]string{"a/../.."}, false},
		{[]string{"ok", ".."}, false},
		{[]string{"a\x00b"}, false},
	} {
		p, err := Join("/x/exchange", tt.names...)
		if ok := err == nil; ok != tt.ok || ok && !within(p, "/x/exchange") {
			t.Errorf("Join(%q) = %q, %v; want ok %v", tt.names, p, err, tt.ok)
		}
		if !tt.ok && !errors.Is(err, ErrOutside) {
			t.Errorf("Join(%q): %v, want %v", tt.names, err, ErrOutside)
		}
	}
}

// TestMkdir: the folders under an existing one are created, the folder
// itself never is, and a symlink on the way is refused.
func TestMkdir(t *testing.T) {
	tr := newTree(t)
	if _, err := Mkdir(filepath.Join(tr.out, "no"), "run"); !errors.Is(err, ErrNoFolder) {
		t.Errorf("missing folder: err = %v, want %v", err, ErrNoFolder)
	}
	if _, err := os.Stat(filepath.Join(tr.out, "no")); err == nil {
		t.Error("Mkdir created the folder it was given")
	}
	got, err := Mkdir(tr.out, "run", "3", "t")
	if err != nil || got != filepath.Join(tr.out, "run", "3", "t") {
		t.Fatalf("Mkdir = %q, %v", got, err)
	}
	if _, err := Mkdir(tr.out, "run", "3", "t"); err != nil {
		t.Errorf("again: %v", err)
	}
	if _, err := Mkdir(tr.out, "bundle-link", "x"); !errors.Is(err, ErrSymlink) {
		t.Errorf("through a symlink: err = %v, want %v", err, ErrSymlink)
	}
	if _, err := os.Stat(filepath.Join(tr.bundle, "x")); err == nil {
		t.Error("Mkdir wrote into the symlink's target")
	}
	if _, err := Mkdir(tr.out, ".."); !errors.Is(err, ErrOutside) {
		t.Errorf("..: err = %v, want %v", err, ErrOutside)
	}
}

// TestWrite: a file is written whole; without force an existing file (or
// a symlink) is left as it is, with force it is replaced, a symlink by a
// file and never its target.
func TestWrite(t *testing.T) {
	tr := newTree(t)
	text := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	read := func(p string) string { b, _ := os.ReadFile(p); return string(b) }
	p := filepath.Join(tr.out, "new.json")
	if err := Write(p, false, text("new")); err != nil || read(p) != "new" {
		t.Errorf("new file: %q, %v", read(p), err)
	}
	if err := Write(tr.old, false, text("new")); !errors.Is(err, ErrExists) || read(tr.old) != "x" {
		t.Errorf("existing file unforced: %q, %v", read(tr.old), err)
	}
	if err := Write(tr.link, false, text("new")); !errors.Is(err, ErrExists) || read(tr.manifest) != "x" {
		t.Errorf("symlink unforced: manifest %q, %v", read(tr.manifest), err)
	}
	if err := Write(tr.old, true, text("new")); err != nil || read(tr.old) != "new" {
		t.Errorf("existing file forced: %q, %v", read(tr.old), err)
	}
	if err := Write(tr.link, true, text("new")); err != nil || read(tr.manifest) != "x" {
		t.Errorf("symlink forced: manifest %q, %v", read(tr.manifest), err)
	}
	if err := Write(p, true, func(io.Writer) error { return errors.New("render failed") }); err == nil || read(p) != "new" {
		t.Errorf("failed write: %q, %v", read(p), err)
	}
	entries, _ := os.ReadDir(tr.out)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("left %s", e.Name())
		}
	}
}
