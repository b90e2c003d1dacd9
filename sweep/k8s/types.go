package k8s

// The parts of the Kubernetes API objects the manifest uses, with the API's
// field names (batch/v1 Job, core/v1 PodSpec).

type job struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
	Spec       jobSpec    `yaml:"spec"`
}

type objectMeta struct {
	Name      string            `yaml:"name,omitempty"`
	Namespace string            `yaml:"namespace,omitempty"`
	Labels    map[string]string `yaml:"labels,omitempty"`
}

type jobSpec struct {
	CompletionMode          string      `yaml:"completionMode"`
	Completions             int         `yaml:"completions"`
	Parallelism             int         `yaml:"parallelism"`
	BackoffLimit            *int        `yaml:"backoffLimit,omitempty"`
	ActiveDeadlineSeconds   *int        `yaml:"activeDeadlineSeconds,omitempty"`
	TTLSecondsAfterFinished *int        `yaml:"ttlSecondsAfterFinished,omitempty"`
	Template                podTemplate `yaml:"template"`
}

type podTemplate struct {
	Metadata objectMeta `yaml:"metadata"`
	Spec     podSpec    `yaml:"spec"`
}

type podSpec struct {
	RestartPolicy      string            `yaml:"restartPolicy"`
	ServiceAccountName string            `yaml:"serviceAccountName,omitempty"`
	NodeSelector       map[string]string `yaml:"nodeSelector,omitempty"`
	Containers         []container       `yaml:"containers"`
	Volumes            []volume          `yaml:"volumes"`
}

type container struct {
	Name            string          `yaml:"name"`
	Image           string          `yaml:"image"`
	ImagePullPolicy string          `yaml:"imagePullPolicy,omitempty"`
	Command         []string        `yaml:"command"`
	WorkingDir      string          `yaml:"workingDir,omitempty"`
	Env             []envVar        `yaml:"env,omitempty"`
	EnvFrom         []envFromSource `yaml:"envFrom,omitempty"`
	Resources       *resources      `yaml:"resources,omitempty"`
	VolumeMounts    []volumeMount   `yaml:"volumeMounts"`
}

type envVar struct {
	Name      string     `yaml:"name"`
	Value     string     `yaml:"value,omitempty"`
	ValueFrom *envSource `yaml:"valueFrom,omitempty"`
}

type envSource struct {
	FieldRef *fieldRef `yaml:"fieldRef,omitempty"`
}

type fieldRef struct {
	FieldPath string `yaml:"fieldPath"`
}

type envFromSource struct {
	SecretRef *localRef `yaml:"secretRef,omitempty"`
}

type localRef struct {
	Name string `yaml:"name"`
}

type resources struct {
	Limits   map[string]string `yaml:"limits,omitempty"`
	Requests map[string]string `yaml:"requests,omitempty"`
}

type volumeMount struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
}

type volume struct {
	Name                  string          `yaml:"name"`
	PersistentVolumeClaim *pvcSource      `yaml:"persistentVolumeClaim,omitempty"`
	HostPath              *hostPathSource `yaml:"hostPath,omitempty"`
}

type pvcSource struct {
	ClaimName string `yaml:"claimName"`
}

type hostPathSource struct {
	Path string `yaml:"path"`
	Type string `yaml:"type,omitempty"`
}
