package llm

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"
)

// Option configures New.
type Option func(*options)

type options struct {
	logger    *slog.Logger
	getenv    func(string) string
	environ   func() []string
	transport http.RoundTripper
	now       func() time.Time
	sleep     func(context.Context, time.Duration) error
	rand      func() float64
	// withTimeout bounds one attempt (nil = context.WithTimeout); tests
	// set it to decide which attempt runs past the timeout.
	withTimeout func(context.Context, time.Duration) (context.Context, context.CancelFunc)
}

// WithLogger sets the logger (default: discard). Everything the stack logs
// passes through a redacting handler first.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithEnv replaces the process environment (tests): getenv reads one
// variable, environ lists all of them as KEY=VALUE.
func WithEnv(getenv func(string) string, environ func() []string) Option {
	return func(o *options) { o.getenv, o.environ = getenv, environ }
}

// WithTransport sets the HTTP transport under the providers (default:
// http.DefaultTransport).
func WithTransport(rt http.RoundTripper) Option { return func(o *options) { o.transport = rt } }

// WithClock sets the clock of the meter and the retry policy (tests).
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithSleep sets how retry waits are slept (tests); it must return early with
// an error when ctx is done.
func WithSleep(sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(o *options) { o.sleep = sleep }
}

// WithRand sets the source of retry jitter, uniform in [0,1) (tests).
func WithRand(f func() float64) Option { return func(o *options) { o.rand = f } }

// New builds the LLM stack of a config (see the package doc): a *Meter
// enforcing cfg.Budget, over request defaults, logging, recording or
// replaying, the retry policy and the provider. Keys are read from the
// environment; a missing one is a *MissingKeyError naming the variable.
func New(cfg Config, opts ...Option) (Client, error) {
	o := options{
		logger: slog.New(slog.DiscardHandler), getenv: os.Getenv, environ: os.Environ,
		transport: http.DefaultTransport, now: time.Now, sleep: sleepCtx, rand: rand.Float64,
	}
	for _, opt := range opts {
		opt(&o)
	}
	cfg = cfg.Resolve()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new llm client: %w", err)
	}
	red := EnvRedactor(o.getenv, o.environ(), keyVars(cfg)...)
	log := slog.New(red.Handler(o.logger.Handler())).With("component", "llm")

	var inner Client
	if cfg.Replay != "" {
		rp, err := NewReplayer(cfg.Replay)
		if err != nil {
			return nil, fmt.Errorf("new llm client: %w", err)
		}
		if cfg.ReplayMatch != "" && !slices.Contains(MatchRules, cfg.ReplayMatch) {
			return nil, fmt.Errorf("new llm client: replay_match %q: give one of %s", cfg.ReplayMatch, strings.Join(MatchRules, ", "))
		}
		rp.Match = cfg.ReplayMatch
		rp.SetLogger(log)
		log.Info("llm replay", "dir", cfg.Replay, "exchanges", rp.Len(), "match", cfg.ReplayMatch)
		inner = rp
	} else {
		stack := func(sc Config) (Client, error) {
			p, err := newProvider(context.Background(), sc, o)
			if err != nil {
				return nil, err
			}
			return &retrier{
				next: p, provider: sc.Provider, url: providerURL(sc), policy: cfg.Retry, timeout: cfg.Timeout, cost: sc.Cost,
				log: log, redact: red, now: o.now, sleep: o.sleep, rand: o.rand, withTimeout: o.withTimeout,
			}, nil
		}
		var err error
		if len(cfg.Steps) > 0 {
			inner, err = newRouted(cfg, stack)
		} else {
			inner, err = stack(cfg)
		}
		if err != nil {
			return nil, fmt.Errorf("new llm client: %w", err)
		}
		if cfg.Record != "" {
			rec, err := NewRecorder(inner, cfg.Record, red)
			if err != nil {
				return nil, fmt.Errorf("new llm client: %w", err)
			}
			log.Info("llm record", "dir", cfg.Record)
			inner = rec
		}
	}
	c := &defaults{next: &logged{next: inner, log: log, redact: red}, cfg: cfg, relabel: cfg.Replay != "" && len(cfg.Steps) > 0}
	return NewMeter(c, cfg.Budget, WithMeterClock(o.now), WithConcurrency(cfg.Concurrency)), nil
}

// keyVars names the environment variables a config may read keys from.
func keyVars(cfg Config) []string {
	v := []string{cfg.APIKeyEnv}
	for _, sc := range cfg.Steps {
		v = append(v, sc.APIKeyEnv)
	}
	v = append(v, "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY",
		"OPENROUTER_API_KEY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
	return v
}

// newProvider builds the provider client, reading its key from the environment.
func newProvider(ctx context.Context, cfg Config, o options) (Client, error) {
	ct := &captureTransport{base: o.transport, now: o.now}
	hc := &http.Client{Transport: ct}
	need := func(env string) (string, error) {
		if v := o.getenv(env); v != "" {
			return v, nil
		}
		return "", &MissingKeyError{Provider: cfg.Provider, Var: env}
	}
	keyEnv := cfg.APIKeyEnv
	if keyEnv == "" {
		keyEnv = defaultKeyEnv[cfg.Provider]
		if cfg.Provider == ProviderOpenAI && cfg.BaseURL != "" {
			keyEnv = "" // a compatible server: no key unless api_key_env names one
		}
	}
	switch cfg.Provider {
	case ProviderOpenAI, ProviderVLLM, ProviderSGLang, ProviderOllama, ProviderOpenRouter:
		key := ""
		if keyEnv != "" {
			var err error
			if key, err = need(keyEnv); err != nil {
				return nil, err
			}
		}
		return newOpenAI(cfg.Provider, cfg.BaseURL, key, hc), nil
	case ProviderAnthropic:
		key, err := need(keyEnv)
		if err != nil {
			return nil, err
		}
		return newAnthropic(cfg.BaseURL, key, hc)
	case ProviderGoogle:
		key := o.getenv(keyEnv)
		if key == "" && cfg.APIKeyEnv == "" {
			key = o.getenv("GEMINI_API_KEY")
		}
		if key == "" {
			return nil, &MissingKeyError{Provider: cfg.Provider, Var: keyEnv}
		}
		ct.header = http.Header{"X-Goog-Api-Key": {key}}
		ct.mapError = googleNoRetry
		return newGoogle(ctx, cfg.BaseURL, key, cfg.Model, hc)
	case ProviderBedrock:
		var cr bedrockCreds
		var err error
		if cr.accessKeyID, err = need("AWS_ACCESS_KEY_ID"); err != nil {
			return nil, err
		}
		secretEnv := "AWS_SECRET_ACCESS_KEY"
		if cfg.APIKeyEnv != "" {
			secretEnv = cfg.APIKeyEnv
		}
		if cr.secretKey, err = need(secretEnv); err != nil {
			return nil, err
		}
		cr.sessionToken = o.getenv("AWS_SESSION_TOKEN")
		cr.region = cfg.Region
		for _, env := range []string{"AWS_REGION", "AWS_DEFAULT_REGION"} {
			if cr.region == "" {
				cr.region = o.getenv(env)
			}
		}
		if cr.region == "" {
			return nil, fmt.Errorf("llm provider bedrock: no region: set llm.region or export AWS_REGION")
		}
		return newBedrock(cfg.BaseURL, cfg.Model, cr, hc)
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownProvider, cfg.Provider)
}

// defaults fills a request's unset fields from the config of its purpose
// (its llm.steps entry, or the config itself), before it is fingerprinted,
// recorded or sent, and names the model of a reply that names none.
type defaults struct {
	next Client
	cfg  Config
	// relabel answers replayed calls as the step's model, priced at the
	// step's prices: one transcript then simulates several models.
	relabel bool
}

func (d *defaults) Complete(ctx context.Context, req Request) (Response, error) {
	sc := d.cfg.ForPurpose(req.Purpose)
	if req.Model == "" {
		req.Model = sc.Model
	}
	if req.MaxTokens == 0 {
		req.MaxTokens = sc.MaxTokens
	}
	if req.Temperature == nil && sc.Temperature != nil {
		t := *sc.Temperature
		req.Temperature = &t
	}
	if req.ReasoningEffort == "" {
		req.ReasoningEffort = sc.ReasoningEffort
	}
	resp, err := d.next.Complete(ctx, req)
	resp.Fingerprint = Fingerprint(req)
	if d.relabel && req.Model != "" {
		resp.Model = req.Model
		if sc.Provider != "" {
			resp.Provider = sc.Provider
		}
		if _, ok := sc.price(req.Model); ok {
			resp.CostUSD = sc.Cost(req.Model, resp.Usage)
		}
	}
	if resp.Model == "" {
		resp.Model = req.Model
	}
	return resp, err
}

// logged writes one line per call: debug on success, warn on failure.
type logged struct {
	next   Client
	log    *slog.Logger
	redact *Redactor
}

func (l *logged) Complete(ctx context.Context, req Request) (Response, error) {
	resp, err := l.next.Complete(ctx, req)
	if err != nil {
		err = l.redact.Error(err)
		l.log.Warn("llm call failed", "purpose", req.Purpose, "model", req.Model, "err", err)
		return resp, err
	}
	l.log.Debug("llm call", "purpose", req.Purpose, "model", req.Model, "provider", resp.Provider,
		"prompt_tokens", resp.Usage.PromptTokens, "completion_tokens", resp.Usage.CompletionTokens,
		"usage_estimated", resp.Usage.Estimated, "cost_usd", resp.CostUSD, "duration", resp.Duration, "finish_reason", resp.FinishReason)
	return resp, nil
}

// Interface guards
var (
	_ Client = (*defaults)(nil)
	_ Client = (*logged)(nil)
)

// providerURL is the server a provider's calls go to, as messages name it.
func providerURL(cfg Config) string {
	if cfg.BaseURL != "" {
		return cfg.BaseURL
	}
	return map[string]string{
		ProviderOpenAI:    "https://api.openai.com/v1",
		ProviderAnthropic: "https://api.anthropic.com",
		ProviderGoogle:    "https://generativelanguage.googleapis.com",
		ProviderBedrock:   "https://bedrock-runtime.<region>.amazonaws.com",
	}[cfg.Provider]
}
