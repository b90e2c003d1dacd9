package llm

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/bedrock"
	"github.com/tmc/langchaingo/llms/googleai"
	"google.golang.org/api/option"
)

// lcClient adapts a langchaingo model (Anthropic, Gemini, Bedrock) to Client.
// Only these three langchaingo packages are imported; llms.CountTokens is
// never called (it downloads tokenizer files at run time).
type lcClient struct {
	m    llms.Model
	name string
	// options turns a request into the provider's call options.
	options func(Request) []llms.CallOption
	// foldSystem sends a system+user request as one user message (Gemini).
	foldSystem bool
}

// messages converts a conversation to langchaingo's form.
func (l *lcClient) messages(ms []Message) []llms.MessageContent {
	if l.foldSystem && singleTurn(ms) {
		// One user turn: the system text goes as leading parts of it, so that
		// langchaingo calls generateContent (its chat path streams, and
		// reports wrong usage for streamed replies).
		parts := make([]llms.ContentPart, len(ms))
		for i, m := range ms {
			parts[i] = llms.TextContent{Text: m.Content}
		}
		return []llms.MessageContent{{Role: llms.ChatMessageTypeHuman, Parts: parts}}
	}
	out := make([]llms.MessageContent, 0, len(ms))
	for _, m := range ms {
		role := llms.ChatMessageTypeHuman
		switch m.Role {
		case RoleSystem:
			role = llms.ChatMessageTypeSystem
		case RoleAssistant:
			role = llms.ChatMessageTypeAI
		}
		out = append(out, llms.TextParts(role, m.Content))
	}
	return out
}

// singleTurn reports whether ms is system messages followed by one user message.
func singleTurn(ms []Message) bool {
	users := 0
	for _, m := range ms {
		switch m.Role {
		case RoleUser:
			users++
		case RoleSystem:
			if users > 0 {
				return false
			}
		default:
			return false
		}
	}
	return users == 1
}

func (l *lcClient) Complete(ctx context.Context, req Request) (Response, error) {
	msgs := l.messages(req.Messages)
	out, err := l.m.GenerateContent(ctx, msgs, l.options(req)...)
	if err != nil {
		return Response{}, fmt.Errorf("%s generate: %w", l.name, err)
	}
	resp := Response{Model: req.Model, Provider: l.name}
	var text strings.Builder
	for i, ch := range out.Choices {
		if ch == nil {
			continue
		}
		// Anthropic returns one choice per content block (thinking, text),
		// each carrying the usage of the whole message: join the text, keep
		// the largest usage.
		text.WriteString(ch.Content)
		u := usageOf(ch.GenerationInfo)
		if u.Total() > resp.Usage.Total() {
			resp.Usage = u
		}
		if i == 0 || resp.FinishReason == "" {
			resp.FinishReason = ch.StopReason
		}
	}
	resp.Text = text.String()
	if resp.Text == "" {
		return resp, fmt.Errorf("%s generate: %w (stop reason %q)", l.name, ErrEmptyReply, resp.FinishReason)
	}
	return resp, nil
}

// usageOf reads token counts from a langchaingo GenerationInfo, whose keys
// and number types differ between providers.
func usageOf(info map[string]any) Usage {
	get := func(keys ...string) int {
		for _, k := range keys {
			switch v := info[k].(type) {
			case int:
				return v
			case int32:
				return int(v)
			case int64:
				return int(v)
			case float64:
				return int(v)
			case *int32:
				if v != nil {
					return int(*v)
				}
			case *int:
				if v != nil {
					return *v
				}
			}
		}
		return 0
	}
	return Usage{
		PromptTokens:     get("InputTokens", "PromptTokens", "input_tokens", "prompt_tokens"),
		CompletionTokens: get("OutputTokens", "CompletionTokens", "output_tokens", "completion_tokens"),
	}
}

// thinkingMode maps a reasoning effort to langchaingo's thinking modes.
func thinkingMode(effort string) llms.ThinkingMode {
	switch effort {
	case "low", "minimal":
		return llms.ThinkingModeLow
	case "medium":
		return llms.ThinkingModeMedium
	case "high", "xhigh", "max":
		return llms.ThinkingModeHigh
	}
	return llms.ThinkingModeNone
}

// anthropicThinks reports whether a Claude model takes extended thinking.
func anthropicThinks(model string) bool {
	m := strings.ToLower(model)
	if strings.Contains(m, "claude-3-7") || strings.Contains(m, "claude-3.7") {
		return true
	}
	for _, p := range []string{"claude-4", "claude-opus-4", "claude-sonnet-4", "claude-haiku-4", "claude-opus-5", "claude-sonnet-5"} {
		if strings.Contains(m, p) {
			return true
		}
	}
	return false
}

func newAnthropic(baseURL, key string, hc *http.Client) (*lcClient, error) {
	opts := []anthropic.Option{anthropic.WithToken(key), anthropic.WithHTTPClient(hc)}
	if baseURL != "" {
		opts = append(opts, anthropic.WithBaseURL(baseURL))
	}
	m, err := anthropic.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("new anthropic client: %w", err)
	}
	return &lcClient{m: m, name: ProviderAnthropic, options: func(req Request) []llms.CallOption {
		o := []llms.CallOption{llms.WithModel(req.Model), llms.WithMaxTokens(req.MaxTokens)}
		// langchaingo always sends a temperature; Anthropic's default is 1,
		// and extended thinking requires exactly 1.
		temp := 1.0
		if req.Temperature != nil {
			temp = *req.Temperature
		}
		if mode := thinkingMode(req.ReasoningEffort); mode != llms.ThinkingModeNone && anthropicThinks(req.Model) {
			o = append(o, llms.WithThinkingMode(mode))
			temp = 1
		}
		return append(o, llms.WithTemperature(temp))
	}}, nil
}

func newGoogle(ctx context.Context, baseURL, key, model string, hc *http.Client) (*lcClient, error) {
	// With option.WithHTTPClient the Google REST client adds no auth of its
	// own, so the transport sends the key in x-goog-api-key. WithAPIKey is
	// still given for the gRPC cache client the library also builds (unused).
	opts := []googleai.Option{googleai.WithHTTPClient(hc), googleai.WithAPIKey(key), googleai.WithDefaultModel(model)}
	if baseURL != "" {
		opts = append(opts, func(o *googleai.Options) {
			o.ClientOptions = append(o.ClientOptions, option.WithEndpoint(baseURL))
		})
	}
	m, err := googleai.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("new gemini client: %w", err)
	}
	return &lcClient{m: m, name: ProviderGoogle, foldSystem: true, options: func(req Request) []llms.CallOption {
		temp := 1.0 // Gemini's default; langchaingo's own is 0.5
		if req.Temperature != nil {
			temp = *req.Temperature
		}
		// langchaingo defaults top_k to 3, which starves code generation.
		return []llms.CallOption{llms.WithModel(req.Model), llms.WithMaxTokens(req.MaxTokens),
			llms.WithTemperature(temp), llms.WithTopK(64), llms.WithTopP(0.95)}
	}}, nil
}

// bedrockCreds are the AWS credentials and region read from the environment.
type bedrockCreds struct {
	accessKeyID, secretKey, sessionToken, region string
}

func newBedrock(baseURL, model string, creds bedrockCreds, hc *http.Client) (*lcClient, error) {
	o := bedrockruntime.Options{
		Region:      creds.region,
		Credentials: aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(creds.accessKeyID, creds.secretKey, creds.sessionToken)),
		HTTPClient:  hc,
		Retryer:     aws.NopRetryer{}, // the one retry policy is ours
	}
	if baseURL != "" {
		o.BaseEndpoint = aws.String(baseURL)
	}
	m, err := bedrock.New(bedrock.WithClient(bedrockruntime.New(o)), bedrock.WithModel(model))
	if err != nil {
		return nil, fmt.Errorf("new bedrock client: %w", err)
	}
	return &lcClient{m: m, name: ProviderBedrock, options: func(req Request) []llms.CallOption {
		o := []llms.CallOption{llms.WithModel(req.Model), llms.WithMaxTokens(req.MaxTokens)}
		if req.Temperature != nil {
			o = append(o, llms.WithTemperature(*req.Temperature))
		}
		return o
	}}, nil
}

// Interface guards
var _ Client = (*lcClient)(nil)
