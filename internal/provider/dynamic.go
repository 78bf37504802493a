package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
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
// what names the attribute: its errors are *fielderr.Error on it or on its
// element.
func goObjects(v attr.Value, what string) ([]map[string]any, error) {
	g, err := goValue(v)
	if err != nil || g == nil {
		return nil, err
	}
	list, ok := g.([]any)
	if !ok {
		return nil, fielderr.Errorf(what, "must be a list of objects, got %s", typeName(g))
	}
	out := make([]map[string]any, 0, len(list))
	for i, it := range list {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, fielderr.Errorf(fielderr.Index(what, i), "must be an object, got %s", typeName(it))
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
	case nil:
		return "null"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// tfValue converts plain Go (what YAML or JSON decodes to) into a Terraform
// value of the shape HCL gives the same literal: maps become objects, slices
// tuples, so that `values = { replicaCount = 2 }` in a configuration equals the
// values read back from a release.
func tfValue(v any) (attr.Value, error) {
	switch tv := v.(type) {
	case nil:
		return types.DynamicNull(), nil
	case string:
		return types.StringValue(tv), nil
	case bool:
		return types.BoolValue(tv), nil
	case int:
		return types.NumberValue(new(big.Float).SetInt64(int64(tv))), nil
	case int64:
		return types.NumberValue(new(big.Float).SetInt64(tv)), nil
	case float64:
		return types.NumberValue(big.NewFloat(tv)), nil
	case json.Number:
		f, _, err := big.ParseFloat(string(tv), 10, 512, big.ToNearestEven)
		if err != nil {
			return nil, err
		}
		return types.NumberValue(f), nil
	case map[string]any:
		attrTypes := make(map[string]attr.Type, len(tv))
		vals := make(map[string]attr.Value, len(tv))
		for k, e := range tv {
			ev, err := tfValue(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			attrTypes[k], vals[k] = ev.Type(context.Background()), ev
		}
		o, diags := types.ObjectValue(attrTypes, vals)
		if diags.HasError() {
			return nil, fmt.Errorf("%v", diags)
		}
		return o, nil
	case []any:
		elemTypes := make([]attr.Type, 0, len(tv))
		vals := make([]attr.Value, 0, len(tv))
		for i, e := range tv {
			ev, err := tfValue(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			elemTypes, vals = append(elemTypes, ev.Type(context.Background())), append(vals, ev)
		}
		t, diags := types.TupleValue(elemTypes, vals)
		if diags.HasError() {
			return nil, fmt.Errorf("%v", diags)
		}
		return t, nil
	default:
		return nil, fmt.Errorf("unsupported value type %T", v)
	}
}
