package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
)

// encodeJSON encodes v as standard JSON for a column. JSON has no NaN or
// infinity (KernelAgent wrote "Infinity", which strict readers reject), so a
// value holding one is stored with those numbers as 0, which the result types
// read as "not measured" — as the harness does with non-finite numbers.
func encodeJSON(v any) (sql.NullString, error) {
	b, err := json.Marshal(v)
	var unsupported *json.UnsupportedValueError
	if errors.As(err, &unsupported) {
		b, err = json.Marshal(finite(reflect.ValueOf(v)).Interface())
	}
	if err != nil {
		return sql.NullString{}, fmt.Errorf("encode %T: %w", v, err)
	}
	return sql.NullString{String: string(b), Valid: true}, nil
}

// decodeJSON decodes a nullable JSON column; NULL is nil.
func decodeJSON[T any](v sql.NullString) (*T, error) {
	if !v.Valid {
		return nil, nil
	}
	out := new(T)
	if err := json.Unmarshal([]byte(v.String), out); err != nil {
		return nil, fmt.Errorf("decode %T: %w", out, err)
	}
	return out, nil
}

// finite returns a deep copy of v in which every NaN or ±Inf float is 0.
func finite(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return reflect.Zero(v.Type())
		}
		return v
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		p := reflect.New(v.Type().Elem())
		p.Elem().Set(finite(v.Elem()))
		return p
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		out.Set(v)
		for i := range v.NumField() {
			if f := out.Field(i); f.CanSet() {
				f.Set(finite(v.Field(i)))
			}
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(finite(v.Index(i)))
		}
		return out
	case reflect.Array:
		out := reflect.New(v.Type()).Elem()
		for i := range v.Len() {
			out.Index(i).Set(finite(v.Index(i)))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		iter := v.MapRange()
		for iter.Next() {
			out.SetMapIndex(iter.Key(), finite(iter.Value()))
		}
		return out
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type()).Elem()
		out.Set(finite(v.Elem()))
		return out
	}
	return v
}
