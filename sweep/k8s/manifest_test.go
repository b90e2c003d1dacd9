package k8s_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/kagent-kernels/kagent/sweep/k8s"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func intp(n int) *int { return &n }

var args2 = []string{"kagent", "sweep", "--shard", "{index}/2", "--out", "/sweep", "--problems", "1-4"}

// manifestCases are option sets that must all give a valid Job.
var manifestCases = []struct {
	name   string
	shards int
	opts   k8s.Options
}{
	{"pvc with gpus", 2, k8s.Options{Image: "ghcr.io/example/kagent:1.0", GPUs: 1, PVC: "kagent-sweeps", EnvFromSecret: "llm-keys"}},
	{"host path without gpus", 3, k8s.Options{Image: "kagent:dev", HostPath: "/data/sweeps/run1", ImagePullPolicy: "Never"}},
	{"everything", 8, k8s.Options{
		Name: "sweep-l1", Namespace: "kernels", Image: "kagent:dev", ImagePullPolicy: "IfNotPresent",
		GPUs: 2, GPUResource: "amd.com/gpu", CPU: "8", Memory: "64Gi", PVC: "sweeps.fast",
		MountPath: "/work/sweep", Parallelism: 4, BackoffLimit: intp(8), ActiveDeadlineSeconds: 7200,
		TTLSecondsAfterFinished: intp(86400), RestartPolicy: "OnFailure", EnvFromSecret: "llm-keys",
		Env: map[string]string{"KAGENT_PYTHON": "/usr/bin/python3", "KAGENT_LOG_LEVEL": "debug"}, ServiceAccount: "kagent",
		NodeSelector: map[string]string{"nvidia.com/gpu.product": "NVIDIA-H200"}, Labels: map[string]string{"team": "kernels"},
	}},
}

// decode reads a manifest as generic values, as a JSON Schema sees them.
func decode(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("manifest is not YAML: %v\n%s", err, data)
	}
	return v
}

func TestManifestMatchesJobSchema(t *testing.T) {
	schema := loadSchema(t, filepath.Join("testdata", "job.schema.json"))
	for _, tc := range manifestCases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string(nil), args2...)
			args[3] = "{index}/" + string(rune('0'+tc.shards))
			out, err := k8s.Manifest(k8s.Spec{Shards: tc.shards, Args: args}, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			job := decode(t, out)
			if errs := schema.validate(job); len(errs) > 0 {
				t.Fatalf("manifest violates the Job schema:\n%s\n%s", strings.Join(errs, "\n"), out)
			}

			spec := job["spec"].(map[string]any)
			if spec["completionMode"] != "Indexed" || spec["completions"] != tc.shards {
				t.Errorf("completionMode %v completions %v, want Indexed %d", spec["completionMode"], spec["completions"], tc.shards)
			}
			wantPar := tc.shards
			if tc.opts.Parallelism > 0 {
				wantPar = tc.opts.Parallelism
			}
			if spec["parallelism"] != wantPar {
				t.Errorf("parallelism %v, want %d", spec["parallelism"], wantPar)
			}
			pod := spec["template"].(map[string]any)["spec"].(map[string]any)
			c := pod["containers"].([]any)[0].(map[string]any)
			cmd := c["command"].([]any)
			if got, want := cmd[3], "$(JOB_COMPLETION_INDEX)/"+string(rune('0'+tc.shards)); got != want {
				t.Errorf("shard argument %v, want %v", got, want)
			}
			env := c["env"].([]any)[0].(map[string]any)
			if env["name"] != "JOB_COMPLETION_INDEX" {
				t.Errorf("first env %v, want JOB_COMPLETION_INDEX from the completion-index annotation", env)
			}
			if tc.opts.GPUs > 0 {
				res := tc.opts.GPUResource
				if res == "" {
					res = k8s.DefaultGPUResource
				}
				limits := c["resources"].(map[string]any)["limits"].(map[string]any)
				if limits[res] == nil {
					t.Errorf("no %s limit in %v", res, limits)
				}
			}
			mount := c["volumeMounts"].([]any)[0].(map[string]any)
			vol := pod["volumes"].([]any)[0].(map[string]any)
			if mount["name"] != vol["name"] {
				t.Errorf("mount %v does not name the volume %v", mount, vol)
			}
		})
	}
}

// TestSchemaCatchesBadJobs shows the schema check has teeth: each mutation of
// a valid manifest is one the API server would reject.
func TestSchemaCatchesBadJobs(t *testing.T) {
	schema := loadSchema(t, filepath.Join("testdata", "job.schema.json"))
	out, err := k8s.Manifest(k8s.Spec{Shards: 2, Args: args2}, manifestCases[0].opts)
	if err != nil {
		t.Fatal(err)
	}
	pod := func(j map[string]any) map[string]any {
		return j["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	}
	container := func(j map[string]any) map[string]any { return pod(j)["containers"].([]any)[0].(map[string]any) }
	tests := []struct {
		name   string
		mutate func(j map[string]any)
		want   string
	}{
		{"restartPolicy Always", func(j map[string]any) { pod(j)["restartPolicy"] = "Always" }, "restartPolicy"},
		{"completionMode lowercase", func(j map[string]any) { j["spec"].(map[string]any)["completionMode"] = "indexed" }, "completionMode"},
		{"indexed without completions", func(j map[string]any) { delete(j["spec"].(map[string]any), "completions") }, "completions"},
		{"completions as a string", func(j map[string]any) { j["spec"].(map[string]any)["completions"] = "2" }, "completions"},
		{"misspelt field", func(j map[string]any) { j["spec"].(map[string]any)["paralelism"] = 2 }, "paralelism"},
		{"wrong apiVersion", func(j map[string]any) { j["apiVersion"] = "batch/v1beta1" }, "apiVersion"},
		{"no template", func(j map[string]any) { delete(j["spec"].(map[string]any), "template") }, "template"},
		{"no containers", func(j map[string]any) { pod(j)["containers"] = []any{} }, "containers"},
		{"uppercase name", func(j map[string]any) { j["metadata"].(map[string]any)["name"] = "Kagent" }, "name"},
		{"bad gpu quantity", func(j map[string]any) {
			container(j)["resources"].(map[string]any)["limits"].(map[string]any)["nvidia.com/gpu"] = "one"
		}, "nvidia.com/gpu"},
		{"two volume sources", func(j map[string]any) {
			pod(j)["volumes"].([]any)[0].(map[string]any)["hostPath"] = map[string]any{"path": "/x"}
		}, "volumes"},
		{"relative mount", func(j map[string]any) {
			container(j)["volumeMounts"].([]any)[0].(map[string]any)["mountPath"] = "sweep"
		}, "mountPath"},
		{"fieldRef without path", func(j map[string]any) {
			container(j)["env"].([]any)[0].(map[string]any)["valueFrom"] = map[string]any{"fieldRef": map[string]any{}}
		}, "fieldPath"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := decode(t, out)
			tt.mutate(j)
			errs := schema.validate(j)
			if len(errs) == 0 {
				t.Fatal("the schema accepted it")
			}
			if !strings.Contains(strings.Join(errs, "\n"), tt.want) {
				t.Errorf("violations %q do not mention %q", errs, tt.want)
			}
		})
	}
}

func TestManifestGolden(t *testing.T) {
	out, err := k8s.Manifest(k8s.Spec{Shards: 8, Args: []string{"kagent", "sweep", "--shard", "{index}/8", "--note", "cost $5 {index}"}}, manifestCases[2].opts)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "job.golden.yaml")
	if *update {
		if err := os.WriteFile(golden, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if !bytes.Equal(out, want) {
		t.Errorf("manifest differs from %s (run with -update if intended):\n%s", golden, out)
	}
	// '$' is escaped so Kubernetes does not expand it; the index is not.
	if !bytes.Contains(out, []byte("cost $$5 $(JOB_COMPLETION_INDEX)")) {
		t.Errorf("'$' not escaped or index not substituted:\n%s", out)
	}
}

func TestManifestRejects(t *testing.T) {
	ok := k8s.Options{Image: "kagent:dev", PVC: "sweeps"}
	tests := []struct {
		name   string
		shards int
		args   []string
		opts   func(o *k8s.Options)
		want   string
	}{
		{"no shards", 0, args2, func(*k8s.Options) {}, "shards"},
		{"no command", 2, nil, func(*k8s.Options) {}, "no command"},
		{"no image", 2, args2, func(o *k8s.Options) { o.Image = "" }, "image"},
		{"no volume", 2, args2, func(o *k8s.Options) { o.PVC = "" }, "volume"},
		{"two volumes", 2, args2, func(o *k8s.Options) { o.HostPath = "/data" }, "volume"},
		{"relative host path", 2, args2, func(o *k8s.Options) { o.PVC, o.HostPath = "", "data" }, "host path"},
		{"bad name", 2, args2, func(o *k8s.Options) { o.Name = "Sweep_1" }, "job name"},
		{"restart always", 2, args2, func(o *k8s.Options) { o.RestartPolicy = "Always" }, "restart policy"},
		{"bad memory", 2, args2, func(o *k8s.Options) { o.Memory = "lots" }, "memory"},
		{"negative gpus", 2, args2, func(o *k8s.Options) { o.GPUs = -1 }, "gpus"},
		{"bad pull policy", 2, args2, func(o *k8s.Options) { o.ImagePullPolicy = "Sometimes" }, "pull policy"},
		{"index env overridden", 2, args2, func(o *k8s.Options) { o.Env = map[string]string{"JOB_COMPLETION_INDEX": "0"} }, "JOB_COMPLETION_INDEX"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := ok
			tt.opts(&o)
			_, err := k8s.Manifest(k8s.Spec{Shards: tt.shards, Args: tt.args}, o)
			if !errors.Is(err, k8s.ErrInvalid) {
				t.Fatalf("err %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %q does not mention %q", err, tt.want)
			}
		})
	}
}
