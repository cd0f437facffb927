package expr

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// jsonBuildObjectKernel is json_build_object(k1, v1, ...): a JSON object
// (as text: streamdb has no json type) of the pairs, in order. Numbers and
// booleans are JSON's; NULL is null; everything else is its text form as a
// JSON string. A NULL key is 22004, as in PostgreSQL.
func jsonBuildObjectKernel(t types.T, argTypes []types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		o := newColOut(c.mem(), t, n)
		for i := 0; i < n; i++ {
			buf := []byte{'{'}
			for k := 0; k+1 < len(args); k += 2 {
				key := datumOf(args[k], i)
				if key.Null {
					o.release()
					return vec{}, errNullJSONKey()
				}
				if k > 0 {
					buf = append(buf, ", "...)
				}
				buf = appendJSONString(buf, types.AppendText(nil, key, argTypes[k]))
				buf = append(buf, " : "...)
				v, vt := datumOf(args[k+1], i), argTypes[k+1]
				switch {
				case v.Null:
					buf = append(buf, "null"...)
				case vt.Kind == types.Bool && v.I != 0:
					buf = append(buf, "true"...)
				case vt.Kind == types.Bool:
					buf = append(buf, "false"...)
				case vt.IsInteger() || vt.IsFloat() || vt.Kind == types.Numeric:
					buf = types.AppendText(buf, v, vt)
				default:
					buf = appendJSONString(buf, types.AppendText(nil, v, vt))
				}
			}
			buf = append(buf, '}')
			o.set(i, types.Str(string(buf)))
		}
		return o.finish(c.mem(), n), nil
	}
}

// appendJSONString appends s as a JSON string.
func appendJSONString(buf, s []byte) []byte {
	q, _ := json.Marshal(string(s)) // a string always marshals
	return append(buf, q...)
}

func errNullJSONKey() error {
	return sqlerr.New(sqlerr.NullValueNotAllowed, "null value not allowed for object key")
}

// argTypes are the types of e's arguments.
func argTypes(args []Expr) []types.T {
	ts := make([]types.T, len(args))
	for i, a := range args {
		ts[i] = a.Type()
	}
	return ts
}

// ---- json and jsonb (types/json.go) ----
//
// A jsonb value is held as its canonical text and parsed per row where an
// operator needs its structure; json values keep their text as written,
// so -> on json returns the element's text as written, as PostgreSQL's does.

// jsonKernel picks the kernel of a json operator or function; ok is false
// for other names.
func jsonKernel(e *Func) (k kernel, lo, hi int, ok bool) {
	ts := argTypes(e.Args)
	switch e.Name {
	case "->", "->>", "#>", "#>>":
		return jsonGetKernel(e.Name, e.T, ts), 2, 2, true
	case "@>", "<@", "?", "?|", "?&", "jsonb_eq":
		return jsonPredKernel(e.Name), 2, 2, true
	case "jsonb_lt", "jsonb_le", "jsonb_gt", "jsonb_ge":
		return jsonCmpKernel(e.Name), 2, 2, true
	case "jsonb_typeof", "json_typeof", "jsonb_array_length":
		return jsonInfoKernel(e.Name, e.T, ts[0]), 1, 1, true
	case "to_jsonb":
		return toJSONBKernel(e.T, ts[0]), 1, 1, true
	case "jsonb_agg_final":
		return jsonbAggFinalKernel(e.T, false), 1, 1, true
	case "jsonb_object_agg_final":
		return jsonbAggFinalKernel(e.T, true), 2, 2, true
	case "jsonb_build_object", "jsonb_build_array":
		return jsonbBuildKernel(e.Name == "jsonb_build_object", e.T, ts), 0, math.MaxInt, true
	}
	return nil, 0, 0, false
}

// parseJSONArg parses a json (keepRaw) or jsonb column value.
func parseJSONArg(s string, t types.T) (*types.JSONValue, error) {
	if t.Kind == types.JSON {
		return types.ParseJSON(s, false)
	}
	return types.DecodeJSONB(s), nil
}

// jsonOut is v as a value of t (json: as written; jsonb: canonical; text: ->>'s text).
func jsonOut(v *types.JSONValue, t types.T, jsonb bool) types.Datum {
	if v == nil {
		return types.Null
	}
	switch t.Kind {
	case types.Text:
		s, ok := types.JSONText(v, jsonb)
		if !ok {
			return types.Null
		}
		if !jsonb && v.Kind == types.JString && strings.Contains(v.Str, `\u0000`) {
			return types.Null // unreachable in practice: see jsonGetKernel
		}
		return types.Str(s)
	case types.JSON:
		return types.Str(v.Raw)
	}
	return types.JSONBDatum(v)
}

func jsonGetKernel(op string, t types.T, ts []types.T) kernel {
	jt, kt := ts[0], ts[1]
	jsonb := jt.Kind == types.JSONB
	if jsonb {
		return jsonbGetKernel(op, t, kt)
	}
	return func(c *Ctx, args []vec, n int) (vec, error) {
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			v, err := parseJSONArg(datumOf(args[0], i).S, jt)
			if err != nil {
				return types.Null, err
			}
			k := datumOf(args[1], i)
			switch {
			case op == "#>" || op == "#>>":
				for j, p := range k.A.Elems {
					if v == nil || k.A.IsNull(j) {
						return types.Null, nil
					}
					if v.Kind == types.JArray {
						idx, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
						if err != nil {
							return types.Null, nil
						}
						v = v.Index(idx)
					} else {
						v = v.Field(p)
					}
				}
			case kt.Kind == types.Text || kt.Kind == types.Unknown:
				v = v.Field(k.S)
			case jsonb && v.Kind != types.JArray && v.Kind != types.JObject:
				// A jsonb scalar is a one-element array to -> (PostgreSQL
				// stores it so): '"a"'::jsonb -> 0 and -> -1 are "a".
				if k.I != 0 && k.I != -1 {
					v = nil
				}
			default:
				v = v.Index(k.I)
			}
			if v != nil && !jsonb && t.Kind == types.Text && v.Kind == types.JString {
				if _, err := types.ParseJSON(v.Raw, true); err != nil {
					return types.Null, err // \u0000 cannot become text
				}
			}
			return jsonOut(v, t, jsonb), nil
		})
	}
}

func jsonPredKernel(op string) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		return c.rowwise(types.TBool, n, args, func(i int) (types.Datum, error) {
			a := datumOf(args[0], i).S
			r := datumOf(args[1], i)
			switch op {
			case "jsonb_eq":
				return types.Boolean(types.JSONBEqual(a, r.S)), nil
			case "@>":
				return types.Boolean(types.JSONBContains(a, r.S)), nil
			case "<@":
				return types.Boolean(types.JSONBContains(r.S, a)), nil
			case "?":
				return types.Boolean(types.JSONBExists(a, r.S)), nil
			}
			any := op == "?|"
			for j, k := range r.A.Elems {
				if r.A.IsNull(j) {
					continue // NULL keys are skipped, as PostgreSQL does
				}
				if types.JSONBExists(a, k) == any {
					return types.Boolean(any), nil
				}
			}
			return types.Boolean(!any), nil
		})
	}
}

// jsonCmpKernel is jsonb's <, <=, >, >= (types.JSONBCompare: PostgreSQL's btree order).
func jsonCmpKernel(name string) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		return c.rowwise(types.TBool, n, args, func(i int) (types.Datum, error) {
			r := types.JSONBCompare(datumOf(args[0], i).S, datumOf(args[1], i).S)
			switch name {
			case "jsonb_lt":
				return types.Boolean(r < 0), nil
			case "jsonb_le":
				return types.Boolean(r <= 0), nil
			case "jsonb_gt":
				return types.Boolean(r > 0), nil
			}
			return types.Boolean(r >= 0), nil
		})
	}
}

func jsonInfoKernel(name string, t, jt types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			if jt.Kind == types.JSONB {
				s := datumOf(args[0], i).S
				if name != "jsonb_array_length" {
					return types.Str(types.JSONBTypeof(s)), nil
				}
				l, ok, obj := types.JSONBArrayLen(s)
				switch {
				case ok:
					return types.Int(int64(l)), nil
				case obj:
					return types.Null, sqlerr.New(sqlerr.InvalidParameterValue, "cannot get array length of a non-array")
				}
				return types.Null, sqlerr.New(sqlerr.InvalidParameterValue, "cannot get array length of a scalar")
			}
			v, err := parseJSONArg(datumOf(args[0], i).S, jt)
			if err != nil {
				return types.Null, err
			}
			if name != "jsonb_array_length" {
				return types.Str(v.Kind.TypeName()), nil
			}
			switch v.Kind {
			case types.JArray:
				return types.Int(int64(len(v.Elems))), nil
			case types.JObject:
				return types.Null, sqlerr.New(sqlerr.InvalidParameterValue, "cannot get array length of a non-array")
			}
			return types.Null, sqlerr.New(sqlerr.InvalidParameterValue, "cannot get array length of a scalar")
		})
	}
}

func toJSONBKernel(t, at types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			v, err := types.JSONBOf(datumOf(args[0], i), at)
			if err != nil {
				return types.Null, err
			}
			return types.JSONBDatum(v), nil
		})
	}
}

// jsonbBuildKernel is jsonb_build_object(k, v, ...) or jsonb_build_array(v, ...):
// NULL values are json nulls; a NULL key is 22004.
func jsonbBuildKernel(object bool, t types.T, ts []types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		o := newColOut(c.mem(), t, n)
		for i := 0; i < n; i++ {
			out := &types.JSONValue{Kind: types.JArray}
			if object {
				out.Kind = types.JObject
			}
			for k := 0; k < len(args); k++ {
				if object && k%2 == 0 {
					key := datumOf(args[k], i)
					if key.Null {
						o.release()
						return vec{}, sqlerr.New(sqlerr.InvalidParameterValue, "argument %d: key must not be null", k+1)
					}
					out.Keys = append(out.Keys, types.TextOf(key, ts[k]))
					continue
				}
				v, err := types.JSONBOf(datumOf(args[k], i), ts[k])
				if err != nil {
					o.release()
					return vec{}, err
				}
				out.Elems = append(out.Elems, v)
			}
			if object {
				types.SortJSONKeys(out)
			}
			o.set(i, types.JSONBDatum(out))
		}
		return o.finish(c.mem(), n), nil
	}
}

// jsonbAggFinalKernel finishes jsonb_agg (an array of the values' jsonb
// texts, a NULL element being null) and jsonb_object_agg (keys and values
// side by side; a NULL key is 22023) from their array_aggs (sql/bind jsonagg.go).
func jsonbAggFinalKernel(t types.T, object bool) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			vals := datumOf(args[len(args)-1], i).A
			out := &types.JSONValue{Kind: types.JArray}
			var keys *types.Array
			if object {
				out.Kind = types.JObject
				keys = datumOf(args[0], i).A
			}
			for j, s := range vals.Elems {
				if object {
					if keys.IsNull(j) {
						return types.Null, sqlerr.New(sqlerr.InvalidParameterValue, "field name must not be null")
					}
					out.Keys = append(out.Keys, keys.Elems[j])
				}
				v := &types.JSONValue{Kind: types.JNull}
				if !vals.IsNull(j) {
					var err error
					if v, err = types.ParseJSON(s, true); err != nil { // to_jsonb's text
						return types.Null, err
					}
				}
				out.Elems = append(out.Elems, v)
			}
			if object {
				types.SortJSONKeys(out)
			}
			return types.JSONBDatum(out), nil
		})
	}
}

// jsonbGetKernel is jsonb's -> and ->> (a key or an index) and #> and
// #>> (a path) on the binary layout: a key is found by binary search, an
// index directly, and the value is a substring of the row's datum, so ->
// and ->> of a string, number or scalar copy nothing but the result.
func jsonbGetKernel(op string, t, kt types.T) kernel {
	text := op == "->>" || op == "#>>"
	return func(c *Ctx, args []vec, n int) (vec, error) {
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			s := datumOf(args[0], i).S
			k := datumOf(args[1], i)
			var v string
			var ok bool
			switch {
			case op == "#>" || op == "#>>":
				v, ok = types.JSONBPath(s, k.A.Elems, k.A.IsNull)
			case kt.Kind == types.Text || kt.Kind == types.Unknown:
				v, ok = types.JSONBGet(s, k.S)
			default:
				v, ok = types.JSONBIndex(s, k.I)
			}
			if !ok {
				return types.Null, nil
			}
			if text {
				if v, ok = types.JSONBAsText(v); !ok {
					return types.Null, nil
				}
			}
			return types.Str(v), nil
		})
	}
}
