package llm_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/kagent-kernels/kagent/agent/llm"
	"github.com/kagent-kernels/kagent/agent/llm/llmtest"
)

// The whole stack against the fake server: a budget, a reply, code extraction.
func Example() {
	srv := llmtest.Start()
	defer srv.Close()
	srv.On("Optimize", llmtest.Reply{Text: "Here you go:\n```python\nimport triton\n\ndef kernel_function(x):\n    return x\n```"})

	client, err := llm.New(llm.Config{Provider: "openai", BaseURL: srv.BaseURL(), Model: "fake",
		Budget: llm.Limits{MaxCalls: 1}})
	if err != nil {
		panic(err)
	}
	req := llm.Request{Purpose: llm.PurposeOptimize, Messages: []llm.Message{llm.User("Optimize this kernel")}}
	resp, err := client.Complete(context.Background(), req)
	if err != nil {
		panic(err)
	}
	code, err := llm.ExtractPython(resp.Text)
	fmt.Print(code, err, "\n")

	_, err = client.Complete(context.Background(), req)
	fmt.Println(errors.Is(err, llm.ErrBudgetExceeded))
	fmt.Println(err)
	// Output:
	// import triton
	//
	// def kernel_function(x):
	//     return x
	// <nil>
	// true
	// llm budget exceeded: max_calls 1 reached (used 1 calls); no further llm calls are made
}
