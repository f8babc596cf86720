package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// TestDockerfile checks the image recipe as far as a machine without
// Docker can: Docker's own parser reads it; it is multi-stage; it builds
// ./cmd/kaudit static (no cgo) with the Go the module names; every file
// it copies exists and .dockerignore lets it through; the final stage is
// a minimal base with /bin/sh, runs as the non-root user the manifests
// name, and its entry point is the binary it copies in.
func TestDockerfile(t *testing.T) {
	root := "../.."
	f, err := os.Open(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		t.Fatalf("Docker's parser: %v", err)
	}
	for _, w := range res.Warnings {
		t.Errorf("Docker's parser warns: %s", w.Short)
	}
	stages, metaArgs, err := instructions.Parse(res.AST, nil)
	if err != nil {
		t.Fatalf("Docker's instructions: %v", err)
	}
	if len(stages) < 2 {
		t.Fatalf("%d stages: want a build stage and a minimal one", len(stages))
	}
	args := map[string]string{}
	for _, a := range metaArgs {
		for _, kv := range a.Args {
			if kv.Value != nil {
				args[kv.Key] = *kv.Value
			}
		}
	}
	expand := func(s string) string {
		return regexp.MustCompile(`\$\{(\w+)\}`).ReplaceAllStringFunc(s, func(m string) string { return args[m[2:len(m)-1]] })
	}

	// the Go of the build stage is the module's
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	build, final := stages[0], stages[len(stages)-1]
	if base := expand(build.BaseName); !strings.HasPrefix(base, "golang:"+string(goVersion[1])) {
		t.Errorf("the build stage is %s, the module needs Go %s", base, goVersion[1])
	}

	// what it copies exists and .dockerignore lets it through
	ignore, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{}
	for _, l := range strings.Split(string(ignore), "\n") {
		if p, ok := strings.CutPrefix(strings.TrimSpace(l), "!"); ok {
			allowed[strings.TrimSuffix(p, "/")] = true
		}
	}
	var built, copiedBinary string
	for _, st := range stages {
		for _, cmd := range st.Commands {
			switch c := cmd.(type) {
			case *instructions.CopyCommand:
				if c.From != "" {
					copiedBinary = c.DestPath
					if !slices.ContainsFunc(stages, func(s instructions.Stage) bool { return s.Name == c.From }) {
						t.Errorf("COPY --from=%s: no such stage", c.From)
					}
					continue
				}
				for _, src := range c.SourcePaths {
					if _, err := os.Stat(filepath.Join(root, src)); err != nil {
						t.Errorf("COPY %s: %v", src, err)
					}
					if !allowed[strings.TrimSuffix(src, "/")] {
						t.Errorf("COPY %s: .dockerignore leaves it out of the build context", src)
					}
				}
			case *instructions.RunCommand:
				if line := strings.Join(c.CmdLine, " "); strings.Contains(line, "go build") {
					built = line
				}
			}
		}
	}
	if !strings.Contains(built, "CGO_ENABLED=0") || !strings.Contains(built, "./cmd/kaudit") {
		t.Errorf("the build %q is not a static build of ./cmd/kaudit", built)
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "kaudit", "main.go")); err != nil {
		t.Error(err)
	}

	// the final stage: a base with /bin/sh, a non-root user, the binary
	if base := expand(final.BaseName); !regexp.MustCompile(`^(alpine|busybox):\d`).MatchString(base) {
		t.Errorf("the final stage is %s: want a minimal base with /bin/sh (alpine or busybox) at a pinned version", base)
	}
	var user, entry string
	for _, cmd := range final.Commands {
		switch c := cmd.(type) {
		case *instructions.UserCommand:
			user = c.User
		case *instructions.EntrypointCommand:
			entry = strings.Join(c.CmdLine, " ")
		}
	}
	uid, err := strconv.Atoi(strings.Split(user, ":")[0])
	if err != nil || uid == 0 {
		t.Errorf("USER %q: want a numeric non-root user (runAsNonRoot checks the number)", user)
	}
	m := readManifests(t)
	for name, js := range m.jobSpecs() {
		if sc := js.Template.Spec.SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != int64(uid) {
			t.Errorf("%s runs as another user than the image's %d", name, uid)
		}
	}
	if copiedBinary == "" || !strings.HasPrefix(entry, copiedBinary) {
		t.Errorf("ENTRYPOINT %q is not the binary copied to %q", entry, copiedBinary)
	}
}
