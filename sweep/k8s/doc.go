// Package k8s writes a kagent sweep as a Kubernetes Indexed Job: a batch/v1
// Job with completionMode Indexed and completions = parallelism = the number
// of shards, whose pod i runs `kagent sweep --shard i/n` (the index comes from
// JOB_COMPLETION_INDEX) against a sweep dir on a shared volume (a
// PersistentVolumeClaim or a hostPath). Apply the manifest with
// `kubectl apply -f`; when the Job completes, `kagent sweep merge` combines the
// shards' results from the volume.
//
// It only writes the manifest: no client library, no cluster access.
package k8s
