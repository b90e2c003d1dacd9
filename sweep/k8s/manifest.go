package k8s

import (
	"bytes"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// IndexPlaceholder, inside an argument of Spec.Args, stands for the pod's
// completion index (0 to Shards-1): "{index}/4" becomes "$(JOB_COMPLETION_INDEX)/4",
// which Kubernetes expands when it starts the container.
const IndexPlaceholder = "{index}"

// indexEnv is the variable the Job controller sets to the completion index;
// the manifest also declares it from the pod's annotation, so $(...) in the
// command expands on every Kubernetes version with Indexed Jobs.
const (
	indexEnv        = "JOB_COMPLETION_INDEX"
	indexAnnotation = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
)

// Defaults.
const (
	DefaultName        = "kagent-sweep"
	DefaultGPUResource = "nvidia.com/gpu"
	DefaultMountPath   = "/sweep"
)

// Spec is the work: Shards pods, each running Args.
type Spec struct {
	// Shards is the number of completions (and pods run at once).
	Shards int
	// Args is one pod's command line, Args[0] the program in the image.
	// IndexPlaceholder in any argument is replaced by the completion index.
	// Paths in it are paths inside the container.
	Args []string
}

// Options shape the Job. Zero values take the defaults noted.
type Options struct {
	Name      string // metadata.name; DefaultName
	Namespace string // metadata.namespace; empty: kubectl's current namespace
	Image     string // container image holding kagent, Python, torch and triton (required)
	// ImagePullPolicy is Always, IfNotPresent or Never; empty: Kubernetes' default.
	ImagePullPolicy string
	// GPUs is the GPU limit of each pod; 0 asks for none. GPUResource names the
	// extended resource (DefaultGPUResource; "amd.com/gpu" on ROCm clusters).
	GPUs        int
	GPUResource string
	// CPU and Memory are the requests of each pod ("8", "32Gi"); Memory is
	// also its limit.
	CPU, Memory string
	// The shared sweep dir: a PersistentVolumeClaim (PVC, the claim's name) or
	// a directory of the node (HostPath); exactly one. It is mounted at
	// MountPath (DefaultMountPath), which is also the container's working dir.
	PVC, HostPath, MountPath string
	// Parallelism caps how many pods run at once; 0: all shards at once.
	Parallelism int
	// BackoffLimit is how many failed pods the Job tolerates in all (a shard
	// retried resumes where it stopped); nil: Kubernetes' default (6).
	BackoffLimit *int
	// ActiveDeadlineSeconds bounds the Job's run time; 0: no bound.
	ActiveDeadlineSeconds int
	// TTLSecondsAfterFinished lets Kubernetes delete the finished Job; nil: kept.
	TTLSecondsAfterFinished *int
	// RestartPolicy is Never (the default: a failed pod is replaced) or OnFailure.
	RestartPolicy string
	// EnvFromSecret names a Secret whose keys become environment variables
	// (the LLM's API key, e.g. OPENAI_API_KEY).
	EnvFromSecret string
	// Env are more environment variables of the container (KAGENT_*).
	Env map[string]string
	// ServiceAccount, NodeSelector, Labels: as in a pod spec; Labels also go on
	// the Job.
	ServiceAccount string
	NodeSelector   map[string]string
	Labels         map[string]string
}

var (
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
	envName      = regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`)
	quantity     = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$`)
	resourceName = regexp.MustCompile(`^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
)

func (o Options) withDefaults() Options {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.GPUResource == "" {
		o.GPUResource = DefaultGPUResource
	}
	if o.MountPath == "" {
		o.MountPath = DefaultMountPath
	}
	if o.RestartPolicy == "" {
		o.RestartPolicy = "Never"
	}
	return o
}

// Validate reports what is wrong with the options (after defaults).
func (o Options) Validate() error {
	o = o.withDefaults()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
	}
	switch {
	case len(o.Name) > 63 || !dnsLabel.MatchString(o.Name):
		return bad("job name %q is not a DNS label (lowercase letters, digits, '-', at most 63)", o.Name)
	case o.Namespace != "" && (len(o.Namespace) > 63 || !dnsLabel.MatchString(o.Namespace)):
		return bad("namespace %q is not a DNS label", o.Namespace)
	case strings.TrimSpace(o.Image) == "":
		return bad("no image (set the container image holding kagent)")
	case o.ImagePullPolicy != "" && !slices.Contains([]string{"Always", "IfNotPresent", "Never"}, o.ImagePullPolicy):
		return bad("image pull policy %q is not Always, IfNotPresent or Never", o.ImagePullPolicy)
	case o.GPUs < 0:
		return bad("gpus %d < 0", o.GPUs)
	case !resourceName.MatchString(o.GPUResource):
		return bad("gpu resource %q is not a resource name", o.GPUResource)
	case o.CPU != "" && !quantity.MatchString(o.CPU):
		return bad("cpu %q is not a quantity", o.CPU)
	case o.Memory != "" && !quantity.MatchString(o.Memory):
		return bad("memory %q is not a quantity", o.Memory)
	case (o.PVC == "") == (o.HostPath == ""):
		return bad("give the sweep dir's volume: a persistent volume claim or a host path (one of them)")
	case o.PVC != "" && (len(o.PVC) > 253 || !dnsSubdomain.MatchString(o.PVC)):
		return bad("claim name %q is not a DNS subdomain", o.PVC)
	case o.HostPath != "" && !strings.HasPrefix(o.HostPath, "/"):
		return bad("host path %q is not absolute", o.HostPath)
	case !strings.HasPrefix(o.MountPath, "/") || strings.Contains(o.MountPath, ":"):
		return bad("mount path %q is not an absolute path without ':'", o.MountPath)
	case o.Parallelism < 0, o.ActiveDeadlineSeconds < 0:
		return bad("parallelism and deadline must not be negative")
	case o.BackoffLimit != nil && *o.BackoffLimit < 0:
		return bad("backoff limit %d < 0", *o.BackoffLimit)
	case o.TTLSecondsAfterFinished != nil && *o.TTLSecondsAfterFinished < 0:
		return bad("ttl after finished %d < 0", *o.TTLSecondsAfterFinished)
	case o.RestartPolicy != "Never" && o.RestartPolicy != "OnFailure":
		return bad("restart policy %q: a Job takes Never or OnFailure", o.RestartPolicy)
	case o.EnvFromSecret != "" && !dnsSubdomain.MatchString(o.EnvFromSecret):
		return bad("secret name %q is not a DNS subdomain", o.EnvFromSecret)
	case o.ServiceAccount != "" && !dnsSubdomain.MatchString(o.ServiceAccount):
		return bad("service account %q is not a DNS subdomain", o.ServiceAccount)
	}
	for k := range o.Env {
		if !envName.MatchString(k) || k == indexEnv {
			return bad("environment variable name %q is not allowed", k)
		}
	}
	return nil
}

// Validate reports what is wrong with the spec.
func (s Spec) Validate() error {
	switch {
	case s.Shards < 1:
		return fmt.Errorf("%w: %d shards (want 1 or more)", ErrInvalid, s.Shards)
	case len(s.Args) == 0 || s.Args[0] == "":
		return fmt.Errorf("%w: no command", ErrInvalid)
	}
	return nil
}

// Manifest renders the Job as YAML, ready for `kubectl apply -f`.
func Manifest(spec Spec, opts Options) ([]byte, error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("write kubernetes job: %w", err)
	}
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("write kubernetes job: %w", err)
	}
	job := build(spec, opts.withDefaults())
	var b bytes.Buffer
	b.WriteString("# Written by kagent: one pod per sweep shard (" + strconv.Itoa(spec.Shards) +
		" shards). Apply with `kubectl apply -f`; merge with `kagent sweep merge`.\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(job); err != nil {
		return nil, fmt.Errorf("write kubernetes job: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("write kubernetes job: %w", err)
	}
	return b.Bytes(), nil
}

// build assembles the Job from valid inputs.
func build(spec Spec, o Options) job {
	labels := map[string]string{
		"app.kubernetes.io/name":      "kagent",
		"app.kubernetes.io/component": "sweep",
	}
	maps.Copy(labels, o.Labels)

	c := container{
		Name:            "shard",
		Image:           o.Image,
		ImagePullPolicy: o.ImagePullPolicy,
		Command:         commandArgs(spec.Args),
		WorkingDir:      o.MountPath,
		Env:             []envVar{{Name: indexEnv, ValueFrom: &envSource{FieldRef: &fieldRef{FieldPath: indexAnnotation}}}},
		VolumeMounts:    []volumeMount{{Name: "sweep", MountPath: o.MountPath}},
	}
	for _, k := range slices.Sorted(maps.Keys(o.Env)) {
		c.Env = append(c.Env, envVar{Name: k, Value: o.Env[k]})
	}
	if o.EnvFromSecret != "" {
		c.EnvFrom = []envFromSource{{SecretRef: &localRef{Name: o.EnvFromSecret}}}
	}
	if o.GPUs > 0 || o.CPU != "" || o.Memory != "" {
		c.Resources = &resources{}
		if o.GPUs > 0 {
			c.Resources.Limits = map[string]string{o.GPUResource: strconv.Itoa(o.GPUs)}
		}
		if o.CPU != "" || o.Memory != "" {
			c.Resources.Requests = map[string]string{}
		}
		if o.CPU != "" {
			c.Resources.Requests["cpu"] = o.CPU
		}
		if o.Memory != "" {
			c.Resources.Requests["memory"] = o.Memory
			if c.Resources.Limits == nil {
				c.Resources.Limits = map[string]string{}
			}
			c.Resources.Limits["memory"] = o.Memory
		}
	}
	vol := volume{Name: "sweep"}
	if o.PVC != "" {
		vol.PersistentVolumeClaim = &pvcSource{ClaimName: o.PVC}
	} else {
		vol.HostPath = &hostPathSource{Path: o.HostPath, Type: "DirectoryOrCreate"}
	}
	parallelism := spec.Shards
	if o.Parallelism > 0 && o.Parallelism < parallelism {
		parallelism = o.Parallelism
	}
	j := job{
		APIVersion: "batch/v1",
		Kind:       "Job",
		Metadata:   objectMeta{Name: o.Name, Namespace: o.Namespace, Labels: labels},
		Spec: jobSpec{
			CompletionMode:          "Indexed",
			Completions:             spec.Shards,
			Parallelism:             parallelism,
			BackoffLimit:            o.BackoffLimit,
			TTLSecondsAfterFinished: o.TTLSecondsAfterFinished,
			Template: podTemplate{
				Metadata: objectMeta{Labels: labels},
				Spec: podSpec{
					RestartPolicy:      o.RestartPolicy,
					ServiceAccountName: o.ServiceAccount,
					NodeSelector:       o.NodeSelector,
					Containers:         []container{c},
					Volumes:            []volume{vol},
				},
			},
		},
	}
	if o.ActiveDeadlineSeconds > 0 {
		d := o.ActiveDeadlineSeconds
		j.Spec.ActiveDeadlineSeconds = &d
	}
	return j
}

// commandArgs escapes '$' (Kubernetes expands $(VAR) in commands; "$$" is a
// literal '$') and puts $(JOB_COMPLETION_INDEX) where IndexPlaceholder was.
func commandArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		parts := strings.Split(a, IndexPlaceholder)
		for j := range parts {
			parts[j] = strings.ReplaceAll(parts[j], "$", "$$")
		}
		out[i] = strings.Join(parts, "$("+indexEnv+")")
	}
	return out
}
