package k8s_test

import (
	"fmt"

	"github.com/kagent-kernels/kagent/sweep/k8s"
)

func ExampleManifest() {
	out, err := k8s.Manifest(
		k8s.Spec{Shards: 2, Args: []string{"kagent", "sweep", "--kernelbench=/data/KernelBench", "--level=1", "--problems=1-20", "--out=/sweep", "--shard={index}/2"}},
		k8s.Options{Image: "registry.example.com/kagent:latest", GPUs: 1, PVC: "kagent-sweeps", EnvFromSecret: "llm-keys"},
	)
	if err != nil {
		panic(err)
	}
	fmt.Print(string(out))
	// Output:
	// # Written by kagent: one pod per sweep shard (2 shards). Apply with `kubectl apply -f`; merge with `kagent sweep merge`.
	// apiVersion: batch/v1
	// kind: Job
	// metadata:
	//   name: kagent-sweep
	//   labels:
	//     app.kubernetes.io/component: sweep
	//     app.kubernetes.io/name: kagent
	// spec:
	//   completionMode: Indexed
	//   completions: 2
	//   parallelism: 2
	//   template:
	//     metadata:
	//       labels:
	//         app.kubernetes.io/component: sweep
	//         app.kubernetes.io/name: kagent
	//     spec:
	//       restartPolicy: Never
	//       containers:
	//         - name: shard
	//           image: registry.example.com/kagent:latest
	//           command:
	//             - kagent
	//             - sweep
	//             - --kernelbench=/data/KernelBench
	//             - --level=1
	//             - --problems=1-20
	//             - --out=/sweep
	//             - --shard=$(JOB_COMPLETION_INDEX)/2
	//           workingDir: /sweep
	//           env:
	//             - name: JOB_COMPLETION_INDEX
	//               valueFrom:
	//                 fieldRef:
	//                   fieldPath: metadata.annotations['batch.kubernetes.io/job-completion-index']
	//           envFrom:
	//             - secretRef:
	//                 name: llm-keys
	//           resources:
	//             limits:
	//               nvidia.com/gpu: "1"
	//           volumeMounts:
	//             - name: sweep
	//               mountPath: /sweep
	//       volumes:
	//         - name: sweep
	//           persistentVolumeClaim:
	//             claimName: kagent-sweeps
}
