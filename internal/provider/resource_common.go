package provider

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
)

// providerDataFrom extracts the provider's data in a resource's Configure. It
// returns nil before the provider is configured (validation, early plans).
func providerDataFrom(req resource.ConfigureRequest, resp *resource.ConfigureResponse) *providerData {
	return providerDataOf(req.ProviderData, &resp.Diagnostics)
}

// providerDataOf is the provider's data from what Configure hands a resource
// or a data source, nil before the provider is configured.
func providerDataOf(pd any, diags *diag.Diagnostics) *providerData {
	if pd == nil {
		return nil
	}
	data, ok := pd.(*providerData)
	if !ok {
		diags.AddError("Unexpected provider data", fmt.Sprintf("got %T: this is a bug in the provider", pd))
		return nil
	}
	return data
}
