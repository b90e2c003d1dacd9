package prompts

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

// Ban is one class of operations a candidate kernel must not use.
type Ban struct {
	// What names the operations as the model should read them.
	What string `json:"what"`
	// Why says what they would defeat.
	Why string `json:"why"`
}

// bansJSON is the export of the verifier's ban list as the model reads it
// (harness/kagent_harness/banlist.py, PROMPT_RULES); the harness's tests keep
// it equal to that table, and every name the static check bans is covered by
// one of its rules.
//
//go:embed bans.json
var bansJSON []byte

// BannedOperations words, for the model, the ban tables of the verifier's
// static check. It applies to module-level code, kernel_function, ModelNew's
// methods and what they call, not to the bodies of @triton.jit functions.
var BannedOperations = mustBans(bansJSON)

func mustBans(b []byte) []Ban {
	var doc struct {
		Rules []Ban `json:"rules"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Rules) == 0 {
		panic(fmt.Sprintf("prompts: bans.json: %v (%d rules)", err, len(doc.Rules)))
	}
	return doc.Rules
}
