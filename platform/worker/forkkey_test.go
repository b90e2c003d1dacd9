package worker

import "testing"

// TestForkKeySharesServersAcrossCaches: workers whose configurations differ
// only in where Triton and torch.compile cache (each test's or sweep
// problem's own cache) share a fork server; any other difference in the
// environment, the interpreter, the device or the isolation does not.
func TestForkKeySharesServersAcrossCaches(t *testing.T) {
	base := Options{Python: "/py", Device: "cpu", Env: []string{"TRITON_CACHE_DIR=/a/triton", "TORCHINDUCTOR_CACHE_DIR=/a/ind", "X=1"}}
	other := base
	other.Env = []string{"TRITON_CACHE_DIR=/b/triton", "TORCHINDUCTOR_CACHE_DIR=/b/ind", "X=1"}
	if forkKey(base, true) != forkKey(other, true) {
		t.Errorf("cache locations split fork servers")
	}
	for name, o := range map[string]Options{
		"env":    {Python: "/py", Device: "cpu", Env: []string{"TRITON_CACHE_DIR=/a/triton", "X=2"}},
		"python": {Python: "/py2", Device: "cpu", Env: base.Env},
		"device": {Python: "/py", Device: "cuda", Env: base.Env},
	} {
		if forkKey(base, true) == forkKey(o, true) {
			t.Errorf("%s: a different configuration shares the server", name)
		}
	}
	if forkKey(base, true) == forkKey(base, false) {
		t.Errorf("isolation: a different configuration shares the server")
	}
}
