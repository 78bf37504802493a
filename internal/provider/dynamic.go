package provider

import (
	"fmt"
	"math/big"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
)

// errUnknownValue marks a value that is not known yet (plan time).
var errUnknownValue = fmt.Errorf("value not known until apply")

// goValue converts a Terraform value of any type (the content of a dynamic
// attribute) into plain Go: maps, slices, strings, bools, int64 for whole
// numbers and float64 otherwise. It returns errUnknownValue when any part is
// unknown.
func goValue(v attr.Value) (any, error) {
	if v == nil || v.IsNull() {
		return nil, nil
	}
	if v.IsUnknown() {
		return nil, errUnknownValue
	}
	switch tv := v.(type) {
	case basetypes.DynamicValue:
		return goValue(tv.UnderlyingValue())
	case basetypes.StringValue:
		return tv.ValueString(), nil
	case basetypes.BoolValue:
		return tv.ValueBool(), nil
	case basetypes.NumberValue:
		return goNumber(tv.ValueBigFloat()), nil
	case basetypes.Int64Value:
		return tv.ValueInt64(), nil
	case basetypes.Float64Value:
		return tv.ValueFloat64(), nil
	case basetypes.ObjectValue:
		return goMap(tv.Attributes())
	case basetypes.MapValue:
		return goMap(tv.Elements())
	case basetypes.ListValue:
		return goSlice(tv.Elements())
	case basetypes.TupleValue:
		return goSlice(tv.Elements())
	case basetypes.SetValue:
		return goSlice(tv.Elements())
	default:
		return nil, fmt.Errorf("unsupported value type %T", v)
	}
}

func goNumber(f *big.Float) any {
	if f.IsInt() {
		if i, acc := f.Int64(); acc == big.Exact {
			return i
		}
	}
	x, _ := f.Float64()
	return x
}

func goMap(m map[string]attr.Value) (map[string]any, error) {
	out := make(map[string]any, len(m))
	for k, v := range m {
		g, err := goValue(v)
		if err != nil {
			return nil, err
		}
		if g != nil {
			out[k] = g
		}
	}
	return out, nil
}

func goSlice(l []attr.Value) ([]any, error) {
	out := make([]any, 0, len(l))
	for _, v := range l {
		g, err := goValue(v)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// goObjects converts a dynamic attribute that must hold a list of objects.
// what names the attribute in errors.
func goObjects(v attr.Value, what string) ([]map[string]any, error) {
	g, err := goValue(v)
	if err != nil || g == nil {
		return nil, err
	}
	list, ok := g.([]any)
	if !ok {
		return nil, fmt.Errorf("%s must be a list of objects, got %s", what, typeName(g))
	}
	out := make([]map[string]any, 0, len(list))
	for i, it := range list {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s[%d] must be an object, got %s", what, i, typeName(it))
		}
		out = append(out, m)
	}
	return out, nil
}

func typeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a bool"
	case int64, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}
