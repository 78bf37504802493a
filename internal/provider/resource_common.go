package provider

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/resource"
)

// providerDataFrom extracts the provider's data in a resource's Configure. It
// returns nil before the provider is configured (validation, early plans).
func providerDataFrom(req resource.ConfigureRequest, resp *resource.ConfigureResponse) *providerData {
	if req.ProviderData == nil {
		return nil
	}
	data, ok := req.ProviderData.(*providerData)
	if !ok {
		resp.Diagnostics.AddError("Unexpected provider data", fmt.Sprintf("got %T: this is a bug in the provider", req.ProviderData))
		return nil
	}
	return data
}
