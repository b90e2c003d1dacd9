package llm

import (
	"context"
	"time"
)

// Role is who speaks a message.
type Role string

// Roles.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one turn of a conversation.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content"`
}

// System returns a system message.
func System(content string) Message { return Message{Role: RoleSystem, Content: content} }

// User returns a user message.
func User(content string) Message { return Message{Role: RoleUser, Content: content} }

// Assistant returns an assistant message.
func Assistant(content string) Message { return Message{Role: RoleAssistant, Content: content} }

// Purpose says what a call is for. It is recorded and logged, is part of the
// replay fingerprint, and splits the accounting; it is never sent to the model.
type Purpose string

// Purposes of the agent's calls.
const (
	PurposeDiagnose Purpose = "diagnose" // bottleneck diagnosis (JSON)
	PurposeOptimize Purpose = "optimize" // rewrite a kernel along one direction
	PurposeRefine   Purpose = "refine"   // fix a kernel that failed verification
	PurposeReflect  Purpose = "reflect"  // reflexion on an attempt (JSON)
	PurposeGenerate Purpose = "generate" // first Triton kernel for a PyTorch problem
)

// Purposes lists every purpose, in the order a round uses them (the single
// source llm.steps is validated against).
func Purposes() []Purpose {
	return []Purpose{PurposeDiagnose, PurposeOptimize, PurposeRefine, PurposeReflect, PurposeGenerate}
}

// Request is one completion request.
type Request struct {
	Messages []Message `json:"messages"`
	// Model overrides the configured model; "" uses it.
	Model string `json:"model,omitempty"`
	// MaxTokens bounds the reply (sent as max_completion_tokens to reasoning
	// models); 0 uses the configured default.
	MaxTokens int `json:"max_tokens,omitempty"`
	// Temperature is sent only when set, and never to reasoning models.
	Temperature *float64 `json:"temperature,omitempty"`
	// ReasoningEffort is "low", "medium" or "high"; "" uses the configured one.
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
	// Purpose labels the call for logs, records and accounting.
	Purpose Purpose `json:"purpose,omitempty"`
}

// Usage is the token count of one call as the provider reported it, or as
// kagent estimated it where the provider reported none (see EstimateTokens).
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// Estimated is true when kagent estimated a count the provider left out
	// of its reply (or reported as 0). Budgets count estimated tokens alike.
	Estimated bool `json:"estimated,omitempty"`
}

// Total is prompt plus completion tokens.
func (u Usage) Total() int { return u.PromptTokens + u.CompletionTokens }

// Response is a model's reply.
type Response struct {
	Text  string `json:"text"`
	Usage Usage  `json:"usage"`
	// CostUSD is computed from the configured prices; 0 when none is known.
	CostUSD float64 `json:"cost_usd"`
	// Model is the model that answered, as the provider named it.
	Model    string `json:"model"`
	Provider string `json:"provider"`
	// FinishReason is the provider's stop reason ("stop", "length", ...), when given.
	FinishReason string `json:"finish_reason,omitempty"`
	// Duration is the wall time of the call, retries included.
	Duration time.Duration `json:"duration_ns,omitempty"`
	// Fingerprint is the replay key of the request as sent, after the
	// configured defaults (model, ...) were filled in; see Fingerprint.
	Fingerprint string `json:"fingerprint,omitempty"`
	// Reasoning is the reasoning text a server returned beside the reply
	// (reasoning_content), if any; it counts when the usage is estimated.
	Reasoning string `json:"reasoning,omitempty"`
}

// Client completes requests. Implementations are safe for concurrent use.
//
// When Complete returns an error it may still return a Response whose Usage
// says what the failed call consumed (an empty reply that used up its token
// budget, for example); accounting layers count it.
type Client interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

// StatsReporter is implemented by clients that account for usage ([*Meter];
// the Client that [New] returns is one).
type StatsReporter interface {
	Stats() Stats
}
