package worker

import "testing"

func TestSessionDType(t *testing.T) {
	f32 := []TensorInfo{{Shape: []int64{4}, DType: "float32"}}
	bf16 := []TensorInfo{{Shape: []int64{4}, DType: "bfloat16"}}
	cases := []struct {
		name, reqDType, tf32 string
		inputs               []TensorInfo
		want                 string
	}{
		{"fp32, TF32 forbidden", "", "forbid", f32, "float32"},
		{"fp32, TF32 allowed", "", "allow", f32, "tf32"},
		{"kernel dir dtype fp32, TF32 allowed", "fp32", "allow", f32, "tf32"},
		{"bf16 is unaffected", "", "allow", bf16, "bfloat16"},
		{"kernel dir dtype wins", "fp16", "forbid", f32, "fp16"},
	}
	for _, tc := range cases {
		s := &Session{Engine: &Engine{req: LoadRequest{DType: tc.reqDType, TF32: tc.tf32}}}
		if got := s.dtype(ProblemInfo{Inputs: tc.inputs, TF32: tc.tf32}); got != tc.want {
			t.Errorf("%s: dtype = %q, want %q", tc.name, got, tc.want)
		}
	}
}
