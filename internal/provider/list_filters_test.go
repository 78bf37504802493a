package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// The string checks refuse what does not parse, on the attribute, and pass
// null, unknown and good values.
func TestStringChecks(t *testing.T) {
	for _, tc := range []struct {
		v         stringCheck
		value     types.String
		wantError string
	}{
		{labelSelectorValidator, types.StringValue("app=web,tier in (a,b),!legacy"), ""},
		{labelSelectorValidator, types.StringValue("app in (a"), `Invalid label selector: "app in (a" is not a Kubernetes label selector`},
		{labelSelectorValidator, types.StringNull(), ""},
		{labelSelectorValidator, types.StringUnknown(), ""},
		{regexpValidator, types.StringValue("^v[0-9]+$"), ""},
		{regexpValidator, types.StringValue("(a"), "Invalid regular expression: error parsing regexp"},
	} {
		resp := &validator.StringResponse{}
		tc.v.ValidateString(context.Background(), validator.StringRequest{Path: path.Root("x"), ConfigValue: tc.value}, resp)
		var got string
		for _, d := range resp.Diagnostics.Errors() {
			got = d.Summary() + ": " + d.Detail()
		}
		if (tc.wantError == "") != (got == "") || !strings.HasPrefix(got, tc.wantError) {
			t.Errorf("%s %s: %q, want %q", tc.v.desc, tc.value, got, tc.wantError)
		}
	}
}
