package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kaudit/kaudit/audit"
)

const deployDir = "../../deploy"

// manifests are deploy/'s objects, decoded strictly into the Kubernetes
// API's own types: an unknown or misspelt field, a duplicate key or a
// value of the wrong type fails.
type manifests struct {
	cronJobs map[string]*batchv1.CronJob
	jobs     map[string]*batchv1.Job
	claims   map[string]*corev1.PersistentVolumeClaim
}

func readManifests(t *testing.T) manifests {
	t.Helper()
	m := manifests{cronJobs: map[string]*batchv1.CronJob{}, jobs: map[string]*batchv1.Job{}, claims: map[string]*corev1.PersistentVolumeClaim{}}
	files, err := filepath.Glob(filepath.Join(deployDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s: %v", deployDir, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range strings.Split(string(b), "\n---\n") {
			var head struct{ APIVersion, Kind string }
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				t.Fatalf("%s #%d: %v", f, i, err)
			}
			var obj interface{ GetName() string }
			switch head.APIVersion + " " + head.Kind {
			case "batch/v1 CronJob":
				obj = &batchv1.CronJob{}
			case "batch/v1 Job":
				obj = &batchv1.Job{}
			case "v1 PersistentVolumeClaim":
				obj = &corev1.PersistentVolumeClaim{}
			default:
				t.Fatalf("%s #%d: %s %s is not a kind this test knows", f, i, head.APIVersion, head.Kind)
			}
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				t.Fatalf("%s #%d: %v", f, i, err)
			}
			switch o := obj.(type) {
			case *batchv1.CronJob:
				m.cronJobs[o.Name] = o
			case *batchv1.Job:
				name := o.Name
				if name == "" {
					name = strings.TrimSuffix(o.GenerateName, "-")
				}
				m.jobs[name] = o
			case *corev1.PersistentVolumeClaim:
				m.claims[o.Name] = o
			}
		}
	}
	return m
}

// jobSpecs are the manifests' jobs by name, the CronJob's template too.
func (m manifests) jobSpecs() map[string]*batchv1.JobSpec {
	specs := map[string]*batchv1.JobSpec{}
	for n, cj := range m.cronJobs {
		specs[n] = &cj.Spec.JobTemplate.Spec
	}
	for n, j := range m.jobs {
		specs[n] = &j.Spec
	}
	return specs
}

// TestDeployManifests checks deploy/ against the Kubernetes API types and
// the rules the API server would apply to these fields.
func TestDeployManifests(t *testing.T) {
	m := readManifests(t)
	for _, name := range []string{"kaudit-nightly", "kaudit-sharded-nightly"} {
		if m.cronJobs[name] == nil {
			t.Fatalf("no CronJob %s", name)
		}
	}
	for _, name := range []string{"kaudit-shards", "kaudit-merge"} {
		if m.jobs[name] == nil {
			t.Fatalf("no Job %s", name)
		}
	}
	// a Job created each night needs a name of its own, or the next
	// night's kubectl create meets the last one's
	for name, j := range m.jobs {
		if j.GenerateName == "" || j.Spec.TTLSecondsAfterFinished == nil {
			t.Errorf("Job %s: a fixed name (%q) or no ttlSecondsAfterFinished: the next run's create fails", name, j.Name)
		}
	}
	for name, cj := range m.cronJobs {
		if cj.Spec.JobTemplate.Spec.TTLSecondsAfterFinished == nil && cj.Spec.SuccessfulJobsHistoryLimit == nil {
			t.Errorf("CronJob %s keeps its Jobs forever", name)
		}
	}
	t.Run("a misspelt field fails", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(deployDir, "sharded-job.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		bad := strings.Replace(string(b), "completionMode:", "completionMod:", 1)
		if err := yaml.UnmarshalStrict([]byte(bad), &batchv1.Job{}); err == nil || !strings.Contains(err.Error(), "completionMod") {
			t.Errorf("err = %v", err)
		}
		bad = strings.Replace(string(b), "parallelism: 3", "parallelism: three", 1)
		if err := yaml.UnmarshalStrict([]byte(bad), &batchv1.Job{}); err == nil {
			t.Error("a string for parallelism decoded")
		}
	})
	cj := m.cronJobs["kaudit-nightly"]
	if f := strings.Fields(cj.Spec.Schedule); len(f) != 5 {
		t.Errorf("schedule %q: want 5 cron fields", cj.Spec.Schedule)
	}
	if cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
		t.Errorf("nightly concurrency %q: two audits of one night must not overlap", cj.Spec.ConcurrencyPolicy)
	}
	specs := map[string]*batchv1.JobSpec{}
	for n, cj := range m.cronJobs {
		specs[n] = &cj.Spec.JobTemplate.Spec
	}
	for n, j := range m.jobs {
		specs[n] = &j.Spec
	}
	for name, js := range specs {
		t.Run(name, func(t *testing.T) {
			checkJobSpec(t, m, js)
		})
	}
	sh := m.jobs["kaudit-shards"].Spec
	if sh.CompletionMode == nil || *sh.CompletionMode != batchv1.IndexedCompletion {
		t.Fatal("kaudit-shards is not an Indexed Job")
	}
	shards := envOf(sh.Template.Spec.Containers[0])["SHARDS"]
	if sh.Completions == nil || sh.Parallelism == nil || strconv.Itoa(int(*sh.Completions)) != shards || *sh.Parallelism != *sh.Completions {
		t.Errorf("completions %v, parallelism %v and SHARDS %s disagree", sh.Completions, sh.Parallelism, shards)
	}
	if sh.BackoffLimitPerIndex != nil && sh.BackoffLimit != nil {
		t.Error("backoffLimitPerIndex with backoffLimit")
	}
	if got := envOf(m.jobs["kaudit-merge"].Spec.Template.Spec.Containers[0])["SHARDS"]; got != shards {
		t.Errorf("the merge reads %s shards, the Job runs %s", got, shards)
	}
}

func checkJobSpec(t *testing.T, m manifests, js *batchv1.JobSpec) {
	t.Helper()
	ps := js.Template.Spec
	if js.PodFailurePolicy != nil && ps.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("podFailurePolicy needs restartPolicy Never, not %q", ps.RestartPolicy)
	}
	if ps.RestartPolicy != corev1.RestartPolicyNever && ps.RestartPolicy != corev1.RestartPolicyOnFailure {
		t.Errorf("a Job's restartPolicy must be Never or OnFailure, not %q", ps.RestartPolicy)
	}
	if len(ps.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(ps.Containers))
	}
	c := ps.Containers[0]
	if c.Image == "" || c.Name == "" {
		t.Error("container without a name or image")
	}
	if js.PodFailurePolicy != nil {
		for _, r := range js.PodFailurePolicy.Rules {
			if r.OnExitCodes == nil || r.OnExitCodes.ContainerName == nil || *r.OnExitCodes.ContainerName != c.Name {
				t.Errorf("pod failure rule %+v names no container of the pod", r)
				continue
			}
			if slices.Contains(r.OnExitCodes.Values, 0) {
				t.Error("a pod failure rule on exit 0")
			}
		}
	}
	vols := map[string]corev1.Volume{}
	for _, v := range ps.Volumes {
		vols[v.Name] = v
		if v.PersistentVolumeClaim != nil && m.claims[v.PersistentVolumeClaim.ClaimName] == nil {
			t.Errorf("volume %s claims %s, which deploy/ does not define", v.Name, v.PersistentVolumeClaim.ClaimName)
		}
	}
	for _, vm := range c.VolumeMounts {
		if _, ok := vols[vm.Name]; !ok {
			t.Errorf("mount %s of no volume", vm.Name)
		}
	}
	if ps.SecurityContext == nil || ps.SecurityContext.RunAsNonRoot == nil || !*ps.SecurityContext.RunAsNonRoot {
		t.Error("the pod may run as root")
	}
	if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Error("the container's root file system is writable: kaudit writes only its reports")
	}
	if len(c.Command) != 2 || c.Command[0] != "/bin/sh" || c.Command[1] != "-c" || len(c.Args) != 1 {
		t.Errorf("command %q args %d: want /bin/sh -c SCRIPT", c.Command, len(c.Args))
	}
}

func envOf(c corev1.Container) map[string]string {
	m := map[string]string{}
	for _, e := range c.Env {
		m[e.Name] = e.Value
	}
	return m
}

// deployRun runs a manifest's container script with sh, as the pod would,
// with kaudit on PATH a wrapper that runs the built binary and points diff
// at the embedded incident bundle instead of the cluster. env overrides the
// container's.
func deployRun(t *testing.T, bin string, c corev1.Container, env map[string]string) int {
	t.Helper()
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "kaudit")
	fixture, _ := filepath.Abs("../../testdata/incidents/dropped")
	if err := os.WriteFile(wrapper, []byte(fmt.Sprintf(`#!/bin/sh
case "$1" in diff) exec %q "$@" --snapshot %q ;; esac
exec %q "$@"
`, bin, fixture, bin)), 0o755); err != nil {
		t.Fatal(err)
	}
	vars := envOf(c)
	for _, k := range []string{"KAUDIT_BOOTSTRAP_SERVER", "KAUDIT_COMMAND_CONFIG", "KAUDIT_TOPOLOGY"} {
		delete(vars, k) // the cluster, its client settings and topology are the bundle's
	}
	spec, _ := filepath.Abs("../../testdata/incidents/dropped.kaudit.yaml")
	vars["KAUDIT_SPEC"] = spec
	for k, v := range env {
		vars[k] = v
	}
	cmd := exec.Command(c.Command[0], append(c.Command[1:], c.Args...)...)
	cmd.Env = []string{"PATH=" + dir + ":/usr/bin:/bin", "HOME=" + dir}
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	t.Logf("%s", out)
	return cmd.ProcessState.ExitCode()
}

// TestDeployScripts runs the manifests' scripts on the embedded incident:
// the Indexed Job's shards, then the merge, find what one whole audit
// finds; the nightly reports the loss the first night and nothing new the
// second, against the first night's baseline.
func TestDeployScripts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	m := readManifests(t)
	bin := buildKaudit(t)
	reports := t.TempDir()

	whole, errOut, code := runCLI(t, "diff", "--snapshot", "../../testdata/incidents/dropped",
		"--spec", "../../testdata/incidents/dropped.kaudit.yaml", "--format", "json")
	if code != exitFindings {
		t.Fatalf("whole audit: exit %d: %s", code, errOut)
	}
	var want audit.Report
	if err := decodeReport([]byte(whole), &want); err != nil {
		t.Fatal(err)
	}

	// the bundle's tasks are partitions 0 and 1: two shards (--shard 0/2, 1/2)
	shard := m.jobs["kaudit-shards"].Spec.Template.Spec.Containers[0]
	exchange := filepath.Join(reports, "exchange")
	sizes := map[string]string{"REPORTS": reports, "SHARDS": "2", "KAUDIT_EXCHANGE": exchange, "EXCHANGE": exchange, "KAUDIT_EXCHANGE_WAIT": "2m"}
	// the shards hand each other their inputs (KAUDIT_EXCHANGE): they run at once
	var codes [2]int
	var wg sync.WaitGroup
	for i := range 2 {
		// the Job's uid, as the downward API gives it
		env := map[string]string{"JOB_COMPLETION_INDEX": strconv.Itoa(i), "KAUDIT_RUN_ID": "uid-tonight"}
		for k, v := range sizes {
			env[k] = v
		}
		wg.Go(func() { codes[i] = deployRun(t, bin, shard, env) })
	}
	wg.Wait()
	for i, code := range codes {
		if code != 0 {
			t.Fatalf("shard %d exited %d, want 0 (its report written)", i, code)
		}
	}
	if _, err := os.Stat(filepath.Join(exchange, "uid-tonight")); err != nil {
		t.Errorf("the shards exchanged no inputs: %v", err)
	}
	if code := deployRun(t, bin, shard, sizes); code == 0 {
		t.Error("the shard script ran without JOB_COMPLETION_INDEX")
	}
	merge := m.jobs["kaudit-merge"].Spec.Template.Spec.Containers[0]
	if code := deployRun(t, bin, merge, sizes); code != exitFindings {
		t.Fatalf("merge exited %d, want %d (the incident's loss)", code, exitFindings)
	}
	if _, err := os.Stat(exchange); err == nil {
		t.Error("the merge left the shards' exchange behind")
	}
	b, err := os.ReadFile(filepath.Join(reports, "merged.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got audit.Report
	if err := decodeReport(b, &got); err != nil {
		t.Fatal(err)
	}
	if g, w := findingKeys(got.Findings), findingKeys(want.Findings); !slices.Equal(g, w) {
		t.Errorf("shards merged find\n%v\none whole audit\n%v", g, w)
	}
	if md, err := os.ReadFile(filepath.Join(reports, "incident.md")); err != nil {
		t.Error(err)
	} else if !strings.HasPrefix(strings.SplitN(string(md), "\n\n", 2)[1], "**Verdict: LOSS.** 6 records vanished") {
		t.Errorf("the merged postmortem opens\n%.300s", md)
	}
	if code := deployRun(t, bin, merge, map[string]string{"REPORTS": reports, "SHARDS": "3"}); code != exitUsage {
		t.Errorf("merge with a shard missing exited %d, want %d", code, exitUsage)
	}
	// shard 1 fails tonight; last night's report of it is still there
	if code := deployRun(t, bin, shard, map[string]string{"REPORTS": reports, "SHARDS": "2", "JOB_COMPLETION_INDEX": "1", "KAUDIT_RUN_ID": "uid-last-night", "KAUDIT_EXCHANGE": ""}); code != 0 {
		t.Fatalf("shard 1 of last night exited %d", code)
	}
	if code := deployRun(t, bin, merge, sizes); code != exitUsage {
		t.Errorf("merge with a shard of another run exited %d, want %d", code, exitUsage)
	}

	// the sharded nightly: shard 0 merges once both shards of its run wrote
	// their reports, its exit code the merged verdict
	scj := m.cronJobs["kaudit-sharded-nightly"].Spec.JobTemplate.Spec.Template.Spec.Containers[0]
	sdir := filepath.Join(reports, "sharded")
	senv := map[string]string{"REPORTS": sdir, "SHARDS": "2", "KAUDIT_EXCHANGE": filepath.Join(sdir, "exchange"), "KAUDIT_EXCHANGE_WAIT": "2m", "KAUDIT_RUN_ID": "uid-cron"}
	for i := range 2 {
		env := map[string]string{"JOB_COMPLETION_INDEX": strconv.Itoa(i)}
		for k, v := range senv {
			env[k] = v
		}
		wg.Go(func() { codes[i] = deployRun(t, bin, scj, env) })
	}
	wg.Wait()
	if codes != [2]int{exitFindings, 0} {
		t.Errorf("sharded nightly: shards exited %v, want [%d 0] (shard 0 the merged verdict)", codes, exitFindings)
	}
	if b, err := os.ReadFile(filepath.Join(sdir, "merged.json")); err != nil {
		t.Error(err)
	} else if err := decodeReport(b, &got); err != nil {
		t.Error(err)
	} else if g, w := findingKeys(got.Findings), findingKeys(want.Findings); !slices.Equal(g, w) {
		t.Errorf("the sharded nightly finds\n%v\none whole audit\n%v", g, w)
	}

	// the nightly: a loss keeps alerting, night after night, until a person
	// acknowledges it; each night's reports are kept
	nightly := m.cronJobs["kaudit-nightly"].Spec.JobTemplate.Spec.Template.Spec.Containers[0]
	dir := filepath.Join(reports, "nightly")
	env := map[string]string{"REPORTS": dir}
	for night := 1; night <= 2; night++ {
		if code := deployRun(t, bin, nightly, env); code != exitFindings {
			t.Fatalf("night %d exited %d, want %d: the loss is not acknowledged", night, code, exitFindings)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "tonight.md"))
	if err != nil {
		t.Fatal(err)
	}
	if head := strings.SplitN(string(md), "\n\n", 2)[1]; !strings.HasPrefix(head, "**Verdict: LOSS.** 6 records vanished") {
		t.Errorf("the second night's postmortem opens\n%.400s", head)
	}
	// acknowledged: the next night is clean, and says so
	b, err = os.ReadFile(filepath.Join(dir, "tonight.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "acknowledged.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := deployRun(t, bin, nightly, env); code != exitClean {
		t.Fatalf("the night after the acknowledgement exited %d, want %d", code, exitClean)
	}
	if md, err = os.ReadFile(filepath.Join(dir, "tonight.md")); err != nil {
		t.Fatal(err)
	}
	if head := strings.SplitN(string(md), "\n\n", 2)[1]; !strings.HasPrefix(head, "**Verdict on what is new since the baseline: CLEAN.**") {
		t.Errorf("the night after the acknowledgement opens\n%.400s", head)
	}
	hist, err := filepath.Glob(filepath.Join(dir, "history", "*.md"))
	if err != nil || len(hist) == 0 {
		t.Errorf("no postmortem kept in history/: %v", err)
	}
}

func findingKeys(fs []audit.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s %s %s/%d@%d %s", f.Stage, f.Cause, f.Topic, f.Partition, f.Offset, f.Key))
	}
	slices.Sort(out)
	return out
}
