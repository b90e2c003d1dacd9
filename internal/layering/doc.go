// Package layering has no code: its tests hold kagent's package graph to its
// layers and its Go files to their size, and run with every `go test ./...`.
//
// The layers, lowest first:
//
//   - leaves: internal/..., roofline, harness (the embedded Python harness),
//     kerneldir, prompts, agent/llm;
//   - the platform contract (package platform), then the profilers and the
//     platform implementations (platform/<name>, platform/worker,
//     platform/gpu), linked into a binary only through platform/all;
//   - the run record (agent/store), then the search strategies (search/...);
//   - configs, the loop (agent, agent/report, agent/generate);
//   - sweeps (sweep/...) and the commands (cmd/...).
//
// The rules in layering_test.go say what each layer may not import, with
// the reason; a broken rule names the package, the import and the chain of
// imports that reaches it. To move a package or add one, keep it in its
// layer, or change the rule in the same commit and say why.
package layering
