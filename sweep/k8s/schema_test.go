package k8s_test

// A small JSON Schema validator (the subset of draft 2020-12 that
// testdata/job.schema.json uses), so the manifest is checked against the Job
// schema without network or a dependency. Keywords it does not know are an
// error, so the schema cannot silently ask for more than is checked.

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

type schemaValidator struct {
	root map[string]any
}

func loadSchema(t *testing.T, path string) *schemaValidator {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &schemaValidator{root: root}
}

// validate returns the violations of v against the root schema, one per
// line, each with the JSON pointer of the value.
func (s *schemaValidator) validate(v any) []string {
	var errs []string
	s.check(s.root, v, "", &errs)
	sort.Strings(errs)
	return errs
}

var annotationKeywords = map[string]bool{"$schema": true, "$comment": true, "$defs": true, "title": true, "description": true}

func (s *schemaValidator) check(schema map[string]any, v any, at string, errs *[]string) {
	fail := func(format string, args ...any) {
		p := at
		if p == "" {
			p = "/"
		}
		*errs = append(*errs, p+": "+fmt.Sprintf(format, args...))
	}
	sub := func(x any) map[string]any {
		m, ok := x.(map[string]any)
		if !ok {
			fail("schema: not a schema object: %v", x)
		}
		return m
	}
	for kw, arg := range schema {
		switch kw {
		case "$ref":
			s.check(s.resolve(arg.(string)), v, at, errs)
		case "type":
			types := []any{arg}
			if l, ok := arg.([]any); ok {
				types = l
			}
			ok := false
			for _, t := range types {
				ok = ok || hasType(v, t.(string))
			}
			if !ok {
				fail("type %s, want %v", typeOf(v), arg)
			}
		case "const":
			if !equal(v, arg) {
				fail("%v, want %v", v, arg)
			}
		case "enum":
			ok := false
			for _, e := range arg.([]any) {
				ok = ok || equal(v, e)
			}
			if !ok {
				fail("%v is not one of %v", v, arg)
			}
		case "required":
			if m, ok := v.(map[string]any); ok {
				for _, k := range arg.([]any) {
					if _, has := m[k.(string)]; !has {
						fail("missing required %q", k)
					}
				}
			}
		case "properties":
			if m, ok := v.(map[string]any); ok {
				for k, ps := range arg.(map[string]any) {
					if x, has := m[k]; has {
						s.check(sub(ps), x, at+"/"+k, errs)
					}
				}
			}
		case "additionalProperties":
			m, ok := v.(map[string]any)
			if !ok {
				continue
			}
			props, _ := schema["properties"].(map[string]any)
			for k, x := range m {
				if _, known := props[k]; known {
					continue
				}
				switch a := arg.(type) {
				case bool:
					if !a {
						fail("unknown field %q", k)
					}
				default:
					s.check(sub(a), x, at+"/"+k, errs)
				}
			}
		case "propertyNames":
			if m, ok := v.(map[string]any); ok {
				for k := range m {
					s.check(sub(arg), k, at+"/"+k+"(name)", errs)
				}
			}
		case "minProperties", "maxProperties":
			if m, ok := v.(map[string]any); ok {
				n := int(arg.(float64))
				if (kw == "minProperties" && len(m) < n) || (kw == "maxProperties" && len(m) > n) {
					fail("%d properties, %s %d", len(m), kw, n)
				}
			}
		case "items":
			if l, ok := v.([]any); ok {
				for i, x := range l {
					s.check(sub(arg), x, fmt.Sprintf("%s/%d", at, i), errs)
				}
			}
		case "minItems", "maxItems":
			if l, ok := v.([]any); ok {
				n := int(arg.(float64))
				if (kw == "minItems" && len(l) < n) || (kw == "maxItems" && len(l) > n) {
					fail("%d items, %s %d", len(l), kw, n)
				}
			}
		case "minLength", "maxLength":
			if str, ok := v.(string); ok {
				n := int(arg.(float64))
				if l := len([]rune(str)); (kw == "minLength" && l < n) || (kw == "maxLength" && l > n) {
					fail("%q has length %d, %s %d", str, l, kw, n)
				}
			}
		case "pattern":
			if str, ok := v.(string); ok && !regexp.MustCompile(arg.(string)).MatchString(str) {
				fail("%q does not match %s", str, arg)
			}
		case "minimum", "maximum":
			if n, ok := number(v); ok {
				lim := arg.(float64)
				if (kw == "minimum" && n < lim) || (kw == "maximum" && n > lim) {
					fail("%v, %s %v", v, kw, lim)
				}
			}
		case "anyOf", "oneOf":
			matched := 0
			for _, alt := range arg.([]any) {
				var e []string
				s.check(sub(alt), v, at, &e)
				if len(e) == 0 {
					matched++
				}
			}
			if matched == 0 || (kw == "oneOf" && matched > 1) {
				fail("%v matches %d of the %s alternatives", v, matched, kw)
			}
		case "allOf":
			for _, alt := range arg.([]any) {
				s.check(sub(alt), v, at, errs)
			}
		case "not":
			var e []string
			s.check(sub(arg), v, at, &e)
			if len(e) == 0 {
				fail("matches a schema it must not: %v", arg)
			}
		case "if":
			var e []string
			s.check(sub(arg), v, at, &e)
			if next, ok := schema["then"]; ok && len(e) == 0 {
				s.check(sub(next), v, at, errs)
			}
			if next, ok := schema["else"]; ok && len(e) > 0 {
				s.check(sub(next), v, at, errs)
			}
		case "then", "else":
			// with "if"
		default:
			if !annotationKeywords[kw] {
				fail("schema: unsupported keyword %q", kw)
			}
		}
	}
}

func (s *schemaValidator) resolve(ref string) map[string]any {
	name, ok := strings.CutPrefix(ref, "#/$defs/")
	if !ok {
		panic("unsupported $ref " + ref)
	}
	defs := s.root["$defs"].(map[string]any)
	d, ok := defs[name].(map[string]any)
	if !ok {
		panic("unknown $ref " + ref)
	}
	return d
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

func hasType(v any, t string) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "number":
		_, ok := number(v)
		return ok
	case "integer":
		n, ok := number(v)
		return ok && n == math.Trunc(n)
	}
	panic("unknown type " + t)
}

func typeOf(v any) string {
	for _, t := range []string{"object", "array", "string", "boolean", "null", "integer", "number"} {
		if hasType(v, t) {
			return t
		}
	}
	return fmt.Sprintf("%T", v)
}

func equal(a, b any) bool {
	if x, ok := number(a); ok {
		y, ok := number(b)
		return ok && x == y
	}
	return fmt.Sprint(a) == fmt.Sprint(b) && typeOf(a) == typeOf(b)
}

func TestSchemaValidator(t *testing.T) {
	schema := map[string]any{
		"type": "object", "required": []any{"a"}, "additionalProperties": false,
		"properties": map[string]any{
			"a": map[string]any{"enum": []any{"x", "y"}},
			"n": map[string]any{"type": "integer", "minimum": 1.0},
			"l": map[string]any{"type": "array", "minItems": 1.0, "items": map[string]any{"type": "string", "pattern": "^[a-z]+$"}},
			"q": map[string]any{"anyOf": []any{map[string]any{"type": "integer"}, map[string]any{"type": "string"}}},
		},
		"if":   map[string]any{"required": []any{"a"}, "properties": map[string]any{"a": map[string]any{"const": "y"}}},
		"then": map[string]any{"required": []any{"n"}},
	}
	v := &schemaValidator{root: schema}
	tests := []struct {
		name  string
		value any
		want  int // number of violations
	}{
		{"valid", map[string]any{"a": "x", "n": 2, "l": []any{"ab"}, "q": "1"}, 0},
		{"missing required", map[string]any{}, 1},
		{"bad enum", map[string]any{"a": "z"}, 1},
		{"unknown field", map[string]any{"a": "x", "b": 1}, 1},
		{"not an integer", map[string]any{"a": "x", "n": 1.5}, 1},
		{"below minimum", map[string]any{"a": "x", "n": 0}, 1},
		{"empty list", map[string]any{"a": "x", "l": []any{}}, 1},
		{"item pattern", map[string]any{"a": "x", "l": []any{"A"}}, 1},
		{"anyOf none", map[string]any{"a": "x", "q": true}, 1},
		{"if then", map[string]any{"a": "y"}, 1},
		{"not an object", "x", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := v.validate(tt.value); len(got) != tt.want {
				t.Errorf("violations %q, want %d", got, tt.want)
			}
		})
	}
}
