package llm

import (
	"context"
	"fmt"
	"math"
	"net/http"

	openai "github.com/sashabaranov/go-openai"
)

// openAIClient speaks OpenAI's chat completions API through go-openai, to
// OpenAI or any compatible server (vLLM, SGLang, Ollama's /v1, OpenRouter, a
// relay). It does no retries: the retrier above it does.
type openAIClient struct {
	c    *openai.Client
	name string // provider name in responses
}

func newOpenAI(name, baseURL, key string, hc *http.Client) *openAIClient {
	cfg := openai.DefaultConfig(key)
	if baseURL != "" {
		cfg.BaseURL = baseURL
	}
	cfg.HTTPClient = hc
	return &openAIClient{c: openai.NewClientWithConfig(cfg), name: name}
}

func (o *openAIClient) Complete(ctx context.Context, req Request) (Response, error) {
	creq := openai.ChatCompletionRequest{Model: req.Model}
	for _, m := range req.Messages {
		creq.Messages = append(creq.Messages, openai.ChatCompletionMessage{Role: string(m.Role), Content: m.Content})
	}
	if isReasoningModel(req.Model) {
		// o-series, gpt-5 and later: max_completion_tokens, no temperature.
		creq.MaxCompletionTokens = req.MaxTokens
		creq.ReasoningEffort = req.ReasoningEffort
	} else {
		creq.MaxTokens = req.MaxTokens
		if req.Temperature != nil {
			t := float32(*req.Temperature)
			if t == 0 {
				// go-openai omits a zero temperature; the smallest positive
				// float32 is sent instead and means the same.
				t = math.SmallestNonzeroFloat32
			}
			creq.Temperature = t
		}
	}
	cresp, err := o.c.CreateChatCompletion(ctx, creq)
	if err != nil {
		return Response{}, fmt.Errorf("%s chat completion: %w", o.name, err)
	}
	resp := Response{
		Model:    cresp.Model,
		Provider: o.name,
		Usage:    Usage{PromptTokens: cresp.Usage.PromptTokens, CompletionTokens: cresp.Usage.CompletionTokens},
	}
	if len(cresp.Choices) == 0 {
		return resp, fmt.Errorf("%s chat completion: %w (no choices)", o.name, ErrEmptyReply)
	}
	ch := cresp.Choices[0]
	resp.Text = ch.Message.Content
	resp.Reasoning = ch.Message.ReasoningContent
	resp.FinishReason = string(ch.FinishReason)
	if resp.Text == "" {
		return resp, fmt.Errorf("%s chat completion: %w (finish_reason %q; a reasoning model may have spent max_tokens %d on thinking)",
			o.name, ErrEmptyReply, resp.FinishReason, req.MaxTokens)
	}
	return resp, nil
}

// Interface guards
var _ Client = (*openAIClient)(nil)
