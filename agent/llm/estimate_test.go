package llm

import (
	"bufio"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kagent-kernels/kagent/agent/llm/llmtest"
)

// TestEstimateTokensAboveRealCounts holds the estimate to real token counts
// (cl100k_base and o200k_base): never below the larger of the two, and on
// the samples of testdata/tokens (a kernel, a rendered prompt, a profiler
// table) not above 1.5 times it.
func TestEstimateTokensAboveRealCounts(t *testing.T) {
	short := []struct {
		s             string
		cl100k, o200k int
	}{
		{"", 0, 0},
		{"x", 1, 1},
		{"Hello, world!", 4, 4},
		{"def kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):", 18, 18},
		{"    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)", 16, 16},
		{"[0.125, -3.5, 1e-05, 65536, 1048576]", 25, 25},
		{"\n\n\n        return out\n", 5, 5},
		{"内核优化需要仔细测量性能。", 15, 10},
		{"🚀 fast kernel ✅", 7, 5},
	}
	for _, tt := range short {
		if got, want := EstimateTokens(tt.s), max(tt.cl100k, tt.o200k); got < want {
			t.Errorf("EstimateTokens(%q) = %d, below the real count %d", tt.s, got, want)
		}
	}

	f, err := os.Open(filepath.Join("testdata", "tokens", "counts.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) != 3 {
			t.Fatalf("counts.tsv: %q: want file, cl100k, o200k", line)
		}
		cl, err1 := strconv.Atoi(fields[1])
		o2, err2 := strconv.Atoi(fields[2])
		if err := errors.Join(err1, err2); err != nil {
			t.Fatalf("counts.tsv: %q: %v", line, err)
		}
		b, err := os.ReadFile(filepath.Join("testdata", "tokens", fields[0]))
		if err != nil {
			t.Fatal(err)
		}
		got, real := EstimateTokens(string(b)), max(cl, o2)
		t.Logf("%s: estimate %d, cl100k %d, o200k %d (%.2fx)", fields[0], got, cl, o2, float64(got)/float64(real))
		if got < real || float64(got) > 1.5*float64(real) {
			t.Errorf("%s: estimate %d, want between %d and 1.5 times that", fields[0], got, real)
		}
		n++
	}
	if n == 0 {
		t.Fatal("counts.tsv lists no samples")
	}
}

func TestEstimateUsage(t *testing.T) {
	req := Request{Messages: []Message{System("You are terse."), User("Write a kernel.")}, MaxTokens: 4000}
	prompt := EstimatePromptTokens(req.Messages)
	reply := "```python\nimport triton\n```"
	tests := []struct {
		name string
		resp Response
		err  error
		want Usage
	}{
		{"reported usage is kept", Response{Text: reply, Usage: Usage{PromptTokens: 30, CompletionTokens: 9}}, nil,
			Usage{PromptTokens: 30, CompletionTokens: 9}},
		{"no usage", Response{Text: reply}, nil,
			Usage{PromptTokens: prompt, CompletionTokens: EstimateTokens(reply), Estimated: true}},
		{"only the prompt reported", Response{Text: reply, Usage: Usage{PromptTokens: 30}}, nil,
			Usage{PromptTokens: 30, CompletionTokens: EstimateTokens(reply), Estimated: true}},
		{"reasoning counts", Response{Text: reply, Reasoning: "think about tiles"}, nil,
			Usage{PromptTokens: prompt, CompletionTokens: EstimateTokens(reply) + EstimateTokens("think about tiles"), Estimated: true}},
		{"empty reply cut off by its length", Response{FinishReason: "length"}, ErrEmptyReply,
			Usage{PromptTokens: prompt, CompletionTokens: 4000, Estimated: true}},
		{"empty reply that stopped", Response{FinishReason: "stop"}, ErrEmptyReply,
			Usage{PromptTokens: prompt, Estimated: true}},
		{"no reply", Response{}, errors.New("400 bad request"), Usage{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := estimateUsage(req, tt.resp, tt.err); got != tt.want {
				t.Errorf("usage = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestNoUsageIsEstimated: a server that leaves usage out still has its
// calls counted and priced, marked as estimated, and the token and dollar
// budgets stop further calls.
func TestNoUsageIsEstimated(t *testing.T) {
	reply := "Here is the kernel.\n\n```python\n" + strings.Repeat("y = tl.load(x_ptr + offs, mask=mask)\n", 40) + "```\n"
	for _, tt := range []struct {
		name    string
		budget  Limits
		wantCap string
	}{
		{"tokens", Limits{MaxTokens: 500}, "max_tokens"},
		{"dollars", Limits{MaxUSD: 0.001}, "max_usd"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.Default(llmtest.Reply{Text: reply, NoUsage: true})
			c, _ := newClient(t, Config{Provider: "vllm", BaseURL: srv.BaseURL(), Model: "qwen3-coder",
				Prices: map[string]Price{"qwen3-coder": {Input: 1, Output: 2}}, Budget: tt.budget})
			req := user("optimize this kernel")
			resp, err := c.Complete(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			want := Usage{PromptTokens: EstimatePromptTokens(req.Messages), CompletionTokens: EstimateTokens(reply), Estimated: true}
			if resp.Usage != want {
				t.Errorf("usage = %+v, want %+v", resp.Usage, want)
			}
			if cost := (float64(want.PromptTokens)*1 + float64(want.CompletionTokens)*2) / 1e6; math.Abs(resp.CostUSD-cost) > 1e-12 {
				t.Errorf("cost = %v, want %v", resp.CostUSD, cost)
			}
			st := c.(StatsReporter).Stats()
			if st.EstimatedCalls != 1 || st.Tokens() != int64(want.Total()) {
				t.Errorf("stats = %+v", st.Totals)
			}
			_, err = c.Complete(context.Background(), req)
			var be *BudgetExceededError
			if !errors.As(err, &be) || be.Cap != tt.wantCap || !strings.Contains(be.Used, "the tokens of 1 of 1 calls estimated") {
				t.Fatalf("second call: err = %v, want the %s cap, saying the tokens were estimated", err, tt.wantCap)
			}
			if srv.Count() != 1 {
				t.Errorf("%d requests reached the server, want 1", srv.Count())
			}
		})
	}
}
