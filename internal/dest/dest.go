// Package dest is the one rule for every path kaudit writes: a report
// (--output, and the timeline picture beside a Markdown one), an inferred
// spec (--save-spec), a spill (--spill-dir), the shards' exchange
// (--exchange and the run's folder in it), a capture (capture --out) and
// the hidden profiles. kaudit writes
//
//   - never inside anything the run reads (a bundle, log dirs, a state
//     dir, a baseline, the spec, the topology, logs, client settings), nor
//     over it;
//   - never through a symlink: the path named is never one, nor is any
//     folder kaudit creates under it;
//   - never over an existing file unless asked (Force, --force), and then
//     only over a regular file, by renaming a whole new one over it;
//   - never outside the folder named: a name it is given for a folder
//     under it (a run id) is one path element, never "..".
//
// Check applies the rule before any work; Join and Mkdir keep names under
// their folder; Write writes a file by it. Refusals are *Refused, whose
// Err is one of the Err values, for errors.Is.
package dest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Kind is what kaudit writes at a path.
type Kind int

const (
	// File is a file kaudit creates, or replaces whole with Force (a
	// report, a spec): its folder must exist.
	File Kind = iota
	// Folder is an existing folder kaudit creates new entries in (a
	// spill's temporary folder, the exchange's run folder).
	Folder
	// NewFolder is a folder kaudit creates, or one it created before and
	// goes on with (capture --out, the exchange's run folder): its parent
	// must exist, and it must not hold what the run reads.
	NewFolder
)

// Path is one path kaudit writes.
type Path struct {
	// Flag names the path in messages ("--output").
	Flag string
	Path string
	Kind Kind
	// Force lets a File replace an existing regular file.
	Force bool
}

// The reasons a path is refused (Refused.Err).
var (
	ErrInput    = errors.New("kaudit never writes where it reads")
	ErrSymlink  = errors.New("kaudit never writes through a symlink")
	ErrExists   = errors.New("kaudit replaces a file only when --force asks it to")
	ErrNoFolder = errors.New("kaudit creates no folder above what it is asked to write")
	ErrOutside  = errors.New("kaudit never writes outside the folder named")
	ErrKind     = errors.New("kaudit writes only regular files and folders")
	ErrTwice    = errors.New("one path is named twice")
)

// Refused says which path kaudit will not write, and why.
type Refused struct {
	Flag, Path string
	// Why is the path's own part of the message; Err the rule it breaks.
	Why string
	Err error
}

func (e *Refused) Error() string {
	msg := e.Path + ": " + e.Why
	if e.Flag != "" {
		msg = e.Flag + " " + msg
	}
	if e.Err != nil {
		msg += ", and " + e.Err.Error()
	}
	return msg
}

func (e *Refused) Unwrap() error { return e.Err }

// Check applies the rule to every path, against inputs (the files and
// folders the run reads; "" is skipped, one that does not exist is
// skipped too: its own open reports it), and refuses one file named
// twice. It returns the first refusal.
func Check(paths []Path, inputs []string) error {
	seen := map[string]string{} // the files, by their real paths
	for _, p := range paths {
		if err := check(p, inputs); err != nil {
			return err
		}
		if p.Kind != File {
			continue // folders may be shared: what kaudit creates in each is new
		}
		real, err := realPath(p.Path)
		if err != nil {
			return &Refused{Flag: p.Flag, Path: p.Path, Why: err.Error()}
		}
		if other, ok := seen[real]; ok {
			return &Refused{Flag: p.Flag, Path: p.Path, Why: "it is also " + other, Err: ErrTwice}
		}
		seen[real] = strings.TrimSpace(p.Flag + " " + p.Path)
	}
	return nil
}

func check(p Path, inputs []string) error {
	refuse := func(why string, err error) error { return &Refused{Flag: p.Flag, Path: p.Path, Why: why, Err: err} }
	if p.Path == "" {
		return refuse("no path", ErrKind)
	}
	info, err := os.Lstat(p.Path)
	exists := err == nil
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
		return refuse(err.Error(), nil)
	case exists && info.Mode()&fs.ModeSymlink != 0:
		return refuse("it is a symlink", ErrSymlink)
	}
	if err := checkInputs(p, inputs); err != nil {
		return err
	}
	switch p.Kind {
	case File:
		if err := parentFolder(p); err != nil {
			return err
		}
		switch {
		case !exists:
		case info.IsDir():
			return refuse("it is a folder, not a file", ErrKind)
		case !info.Mode().IsRegular():
			return refuse("it is not a regular file", ErrKind)
		case !p.Force:
			return refuse("it exists", ErrExists)
		}
	case Folder:
		switch {
		case !exists:
			return refuse("the folder does not exist", ErrNoFolder)
		case !info.IsDir():
			return refuse("it is not a folder", ErrNoFolder)
		}
	case NewFolder:
		if err := parentFolder(p); err != nil {
			return err
		}
		if exists && !info.IsDir() {
			return refuse("it is not a folder", ErrKind)
		}
	}
	return nil
}

// parentFolder refuses a path whose folder does not exist: kaudit creates
// nothing above what it is asked to write.
func parentFolder(p Path) error {
	dir := filepath.Dir(p.Path)
	info, err := os.Stat(dir)
	switch {
	case err != nil:
		return &Refused{Flag: p.Flag, Path: p.Path, Why: "the folder " + dir + " does not exist", Err: ErrNoFolder}
	case !info.IsDir():
		return &Refused{Flag: p.Flag, Path: p.Path, Why: dir + " is not a folder", Err: ErrNoFolder}
	}
	return nil
}

// checkInputs refuses a path that is an input or inside one (by name, its
// symlinks resolved, and by identity, so that a bind mount of an input is
// one too), and a folder kaudit creates that holds one.
func checkInputs(p Path, inputs []string) error {
	real, err := realPath(p.Path)
	if err != nil {
		return &Refused{Flag: p.Flag, Path: p.Path, Why: err.Error()}
	}
	for _, in := range inputs {
		if in == "" {
			continue
		}
		r, err := realPath(in)
		if err != nil {
			continue
		}
		info, err := os.Stat(r)
		if err != nil {
			continue // not there: its own open says so
		}
		switch {
		case real == r || sameAsAncestor(real, info):
			return &Refused{Flag: p.Flag, Path: p.Path, Why: "it is inside the input " + in, Err: ErrInput}
		case info.IsDir() && within(real, r):
			return &Refused{Flag: p.Flag, Path: p.Path, Why: "it is inside the input " + in, Err: ErrInput}
		case p.Kind == NewFolder && within(r, real):
			return &Refused{Flag: p.Flag, Path: p.Path, Why: "it holds the input " + in, Err: ErrInput}
		}
	}
	return nil
}

// sameAsAncestor reports whether path, or a folder above it, is the file
// in (os.SameFile: a hard link or a bind mount of it too).
func sameAsAncestor(path string, in os.FileInfo) bool {
	for p := path; ; p = filepath.Dir(p) {
		if info, err := os.Stat(p); err == nil && os.SameFile(info, in) {
			return true
		}
		if filepath.Dir(p) == p {
			return false
		}
	}
}

// realPath is path made absolute with its symlinks resolved, as far as it
// exists.
func realPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	var rest []string
	for p := abs; ; p = filepath.Dir(p) {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{r}, rest...)...), nil
		}
		if filepath.Dir(p) == p {
			return abs, nil
		}
		rest = append([]string{filepath.Base(p)}, rest...)
	}
}

// within reports whether path is dir or under it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// Join joins names under dir, each one path element (not "", "." or "..",
// no separator, no NUL): a name from a flag (a run id) never leads out of
// the folder named.
func Join(dir string, names ...string) (string, error) {
	for _, n := range names {
		if n == "" || n == "." || n == ".." || strings.ContainsRune(n, '/') || strings.ContainsRune(n, filepath.Separator) || strings.ContainsRune(n, 0) {
			return "", &Refused{Path: filepath.Join(dir, n), Why: fmt.Sprintf("%q is not one name in %s", n, dir), Err: ErrOutside}
		}
	}
	return filepath.Join(append([]string{dir}, names...)...), nil
}

// Mkdir creates the folders names under dir, one inside the other, as
// Join joins them, and returns the last: dir itself must exist (it is
// never created), a folder that exists is used, and a symlink where a
// folder goes is refused.
func Mkdir(dir string, names ...string) (string, error) {
	info, err := os.Lstat(dir)
	switch {
	case err != nil:
		return "", &Refused{Path: dir, Why: "the folder does not exist", Err: ErrNoFolder}
	case info.Mode()&fs.ModeSymlink != 0:
		return "", &Refused{Path: dir, Why: "it is a symlink", Err: ErrSymlink}
	case !info.IsDir():
		return "", &Refused{Path: dir, Why: "it is not a folder", Err: ErrNoFolder}
	}
	path := dir
	for _, n := range names {
		if path, err = Join(path, n); err != nil {
			return "", err
		}
		err := os.Mkdir(path, 0o755)
		if err == nil {
			continue
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
		info, err := os.Lstat(path)
		switch {
		case err != nil:
			return "", err
		case info.Mode()&fs.ModeSymlink != 0:
			return "", &Refused{Path: path, Why: "it is a symlink", Err: ErrSymlink}
		case !info.IsDir():
			return "", &Refused{Path: path, Why: "it is not a folder", Err: ErrKind}
		}
	}
	return path, nil
}

// Write writes path whole or not at all: write fills a new temporary file
// beside it (mode 0666 less the umask), which then takes path's name. With
// force it is renamed over whatever file path is (a rename replaces a
// symlink, never follows it); without, it is linked to path, which fails
// if path exists, so that nothing is ever replaced unasked, even by a file
// that appeared since Check.
func Write(path string, force bool, write func(io.Writer) error) error {
	tmp, err := createTemp(path)
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if force {
		return os.Rename(tmp.Name(), path)
	}
	err = os.Link(tmp.Name(), path)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrExist):
		return &Refused{Path: path, Why: "it exists", Err: ErrExists}
	}
	// a file system without hard links: the check, then the rename
	if _, lerr := os.Lstat(path); lerr == nil {
		return &Refused{Path: path, Why: "it exists", Err: ErrExists}
	}
	return os.Rename(tmp.Name(), path)
}

// createTemp creates a new file beside path, with mode 0666 less the
// umask as any file a command writes (os.CreateTemp's is 0600).
func createTemp(path string) (*os.File, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	for range 100 {
		name := filepath.Join(dir, "."+base+".tmp-"+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("create a temporary file beside %s: %w", path, fs.ErrExist)
}

// Create creates a new file at path for writing, never over an existing
// one nor through a symlink (O_EXCL): the hidden profiles, which are
// written as they go.
func Create(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
}
