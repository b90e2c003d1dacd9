package worker

import (
	"slices"
	"testing"
)

// A worker inherits the switches of the harness it runs and the device
// settings, never credentials, whatever their prefix.
func TestScrubbedEnv(t *testing.T) {
	environ := []string{
		"KAGENT_FUSED=0", "KAGENT_TIMING_CLOCK=profiler", "KAGENT_DEVICE_BUFFERS=1", "KAGENT_MEMORY_LIMIT=8GiB", "CUDA_VISIBLE_DEVICES=1",
		"KAGENT_COMPILE_AHEAD=0", "KAGENT_SPARE_RUNNER=0", "TRITON_CACHE_DIR=/c", "KAGENT_LLM_API_KEY=k", "OPENAI_API_KEY=k", "CUDA_AUTH_TOKEN=t", "HOME=/root",
		"KAGENT_LLM_MODEL=m",
	}
	env := scrubbedEnv(environ, "/w", Options{HarnessDir: "/h", Device: "cuda"})
	for _, want := range []string{"KAGENT_FUSED=0", "KAGENT_TIMING_CLOCK=profiler", "KAGENT_DEVICE_BUFFERS=1", "KAGENT_MEMORY_LIMIT=8GiB",
		"KAGENT_COMPILE_AHEAD=0", "KAGENT_SPARE_RUNNER=0", "CUDA_VISIBLE_DEVICES=1", "TRITON_CACHE_DIR=/c", "HOME=/w", "KAGENT_DEVICE=cuda", "PYTHONPATH=/h"} {
		if !slices.Contains(env, want) {
			t.Errorf("worker env lacks %s: %v", want, env)
		}
	}
	for _, kv := range []string{"KAGENT_LLM_API_KEY=k", "OPENAI_API_KEY=k", "CUDA_AUTH_TOKEN=t", "HOME=/root", "KAGENT_LLM_MODEL=m"} {
		if slices.Contains(env, kv) {
			t.Errorf("worker env passes %s", kv)
		}
	}
}
