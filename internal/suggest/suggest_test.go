package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "abc", 0},
		{"max-round", "max-rounds", 1},
		{"optimze", "optimize", 1},
		{"modle", "model", 1}, // one swap
		{"kitten", "sitting", 3},
		{"ca", "abc", 3}, // optimal string alignment: no edit of a swapped pair
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := Distance(tc.b, tc.a); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestClosest(t *testing.T) {
	commands := []string{"optimize", "generate", "sweep", "runs", "eval", "profile", "specs", "configs", "doctor", "env", "version"}
	flags := []string{"kernel-dir", "k", "max-rounds", "num-workers", "llm-model", "llm-provider", "llm-base-url", "strategy", "s"}
	for _, tc := range []struct {
		typed      string
		candidates []string
		want       string
	}{
		{"optimze", commands, "optimize"},
		{"OPTIMIZE", commands, "optimize"},
		{"optimise", commands, "optimize"},
		{"evla", commands, "eval"},
		{"docter", commands, "doctor"},
		{"prof", commands, "profile"}, // the start of one name
		{"deploy", commands, ""},
		{"x", commands, ""},
		{"en", commands, ""}, // too short to guess from
		{"ENV", commands, "env"},
		{"Ev", commands, ""},
		{"max-round", flags, "max-rounds"},
		{"maxrounds", flags, "max-rounds"},
		{"llm-modle", flags, "llm-model"},
		{"llm", flags, ""}, // begins three names
		{"bogus", flags, ""},
		{"kernel_dir", flags, "kernel-dir"},
		{"lst", []string{"list", "show"}, "list"},
		{"fsh", []string{"bash", "zsh", "fish"}, ""}, // as close to zsh as to fish
		{"bassh", []string{"bash", "zsh", "fish"}, "bash"},
	} {
		if got := Closest(tc.typed, tc.candidates); got != tc.want {
			t.Errorf("Closest(%q) = %q, want %q", tc.typed, got, tc.want)
		}
	}
}
