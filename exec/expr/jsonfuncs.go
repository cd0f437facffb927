package expr

import (
	"encoding/json"

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
