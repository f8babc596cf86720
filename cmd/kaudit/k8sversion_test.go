package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// minKubernetes is the oldest Kubernetes the manifests of deploy/ run on,
// as docs/operations.md and the manifests say: backoffLimitPerIndex is on
// by default from 1.29 (1.27 rejects the field, 1.28 has it behind a
// feature gate).
const minKubernetes = "1.29"

// fieldSince is, for every field the manifests set, the first Kubernetes
// release that serves it by default (GA, or beta and on); the fields of
// batch/v1 Job and CronJob as they were GA in 1.21 say 1.21. A field the
// manifests start to use must be added here, with its release.
var fieldSince = map[string]string{
	"CronJob.apiVersion": "1.21", "CronJob.kind": "1.21", "CronJob.metadata.labels": "1.21", "CronJob.metadata.name": "1.21",
	"CronJob.spec.concurrencyPolicy": "1.21", "CronJob.spec.failedJobsHistoryLimit": "1.21", "CronJob.spec.schedule": "1.21",
	"CronJob.spec.startingDeadlineSeconds": "1.21", "CronJob.spec.successfulJobsHistoryLimit": "1.21",
	"CronJob.spec.timeZone": "1.27", // GA in 1.27 (beta from 1.25)
	"Job.apiVersion":        "1.21", "Job.kind": "1.21", "Job.metadata.labels": "1.21", "Job.metadata.name": "1.21",
	"Job.spec.activeDeadlineSeconds": "1.21", "Job.spec.backoffLimit": "1.21", "Job.spec.completions": "1.21", "Job.spec.parallelism": "1.21",
	"Job.spec.completionMode":          "1.22", // Indexed Jobs, beta and on from 1.22 (GA 1.24)
	"Job.spec.backoffLimitPerIndex":    "1.29", // beta and on from 1.29; alpha behind a gate in 1.28
	"Job.metadata.generateName":        "1.21", // ObjectMeta: every release that serves batch/v1 Jobs
	"Job.spec.ttlSecondsAfterFinished": "1.23", // TTL-after-finished controller GA in 1.23
	"Job.spec.maxFailedIndexes":        "1.29", // with backoffLimitPerIndex
	"Job.spec.podFailurePolicy":        "1.26", // beta and on from 1.26 (GA 1.31)
	"PersistentVolumeClaim.apiVersion": "1.21", "PersistentVolumeClaim.kind": "1.21", "PersistentVolumeClaim.metadata.labels": "1.21",
	"PersistentVolumeClaim.metadata.name": "1.21", "PersistentVolumeClaim.spec.accessModes": "1.21", "PersistentVolumeClaim.spec.resources": "1.21",
	// the pod template's fields, under a Job's (or a CronJob's job template's) spec
	"pod.metadata.labels": "1.21", "pod.spec.restartPolicy": "1.21", "pod.spec.securityContext": "1.21", "pod.spec.volumes": "1.21",
	"pod.spec.containers": "1.21",
	// the downward API's label of a Job's pods naming the Job's uid
	"label batch.kubernetes.io/controller-uid": "1.27",
}

// minorOf is the minor version of "1.29".
func minorOf(v string) int {
	_, m, _ := strings.Cut(v, ".")
	n, _ := strconv.Atoi(m)
	return n
}

// TestManifestsKubernetesVersion holds the manifests to minKubernetes:
// every field they set is known with the release that serves it, none is
// newer than minKubernetes, and one needs it (the minimum is not
// overstated); the manifests and docs/operations.md state it.
func TestManifestsKubernetesVersion(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(deployDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := readManifests(t)
	var objs []any
	for _, o := range m.cronJobs {
		objs = append(objs, o)
	}
	for _, o := range m.jobs {
		objs = append(objs, o)
	}
	for _, o := range m.claims {
		objs = append(objs, o)
	}
	newest, needs := 0, ""
	for _, o := range objs {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		kind, _ := doc["kind"].(string)
		for _, f := range fieldsOf(kind, doc) {
			since, ok := fieldSince[f]
			if !ok {
				t.Errorf("%s: a field the test does not know the Kubernetes release of: add it to fieldSince", f)
				continue
			}
			if minorOf(since) > newest {
				newest, needs = minorOf(since), f
			}
		}
	}
	if newest > minorOf(minKubernetes) {
		t.Errorf("%s needs Kubernetes 1.%d, newer than the stated minimum %s", needs, newest, minKubernetes)
	}
	if newest < minorOf(minKubernetes) {
		t.Errorf("no field needs Kubernetes %s (the newest, %s, needs 1.%d): the minimum is overstated", minKubernetes, needs, newest)
	}
	docs, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(docs), "Kubernetes "+minKubernetes+" or later") {
		t.Errorf("docs/operations.md does not say Kubernetes %s or later", minKubernetes)
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), "kind: Job") || strings.Contains(string(b), "kind: CronJob") {
			if !strings.Contains(string(b), "Kubernetes "+minKubernetes+" or later") {
				t.Errorf("%s does not say Kubernetes %s or later", f, minKubernetes)
			}
		}
	}
}

// fieldsOf lists the fields an object sets, as fieldSince names them:
// kind.path to a field of the object, pod.path to one of a pod template;
// a downward API label is "label NAME".
func fieldsOf(kind string, doc map[string]any) []string {
	var out []string
	var walk func(prefix string, v any, depth int)
	walk = func(prefix string, v any, depth int) {
		switch x := v.(type) {
		case map[string]any:
			if depth == 0 {
				for k, c := range x {
					walk(prefix+"."+k, c, 1)
				}
				return
			}
			for k, c := range x {
				p := prefix + "." + k
				switch {
				case strings.HasSuffix(p, ".template") && (strings.HasPrefix(p, "Job.spec") || strings.HasPrefix(p, "CronJob.spec.jobTemplate.spec")):
					walkPod(c, &out)
				case p == "CronJob.spec.jobTemplate":
					if js, ok := c.(map[string]any)["spec"].(map[string]any); ok {
						for jk, jc := range js {
							if jk == "template" {
								walkPod(jc, &out)
								continue
							}
							out = append(out, "Job.spec."+jk)
						}
					}
				case p == prefix+".spec" || p == prefix+".metadata":
					walk(p, c, 1)
				default:
					out = append(out, p)
				}
			}
		default:
			out = append(out, prefix)
		}
	}
	walk(kind, doc, 0)
	slices.Sort(out)
	return slices.Compact(out)
}

// walkPod adds the pod template's fields and the downward API labels its
// containers read.
func walkPod(v any, out *[]string) {
	pod, _ := v.(map[string]any)
	for k, c := range pod {
		cm, _ := c.(map[string]any)
		for f := range cm {
			*out = append(*out, "pod."+k+"."+f)
		}
	}
	b, _ := json.Marshal(pod)
	for _, part := range strings.Split(string(b), "metadata.labels['")[1:] {
		label, _, _ := strings.Cut(part, "']")
		*out = append(*out, "label "+label)
	}
}
