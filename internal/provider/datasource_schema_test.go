package provider

import (
	"context"
	"testing"

	dschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	rschema "github.com/hashicorp/terraform-plugin-framework/resource/schema"
)

// TestRenderDataSourcesShareResourceSchemas checks that the attributes the
// render data sources take from the resources have the resources' types,
// optionality, descriptions and validators, so that a resource's
// configuration copies over as it is and one schema says what it accepts.
func TestRenderDataSourcesShareResourceSchemas(t *testing.T) {
	ctx := context.Background()
	rel, tmpl := helmReleaseSchema(), helmTemplateSchema()
	set, render := resourceSetSchema(), resourceSetRenderSchema()

	same := func(what, resType, dsType, resDesc, dsDesc string, resOpt, dsOpt bool) {
		t.Helper()
		if resType != dsType || resDesc != dsDesc || resOpt != dsOpt {
			t.Errorf("%s differs in the data source:\ntype %s\n     %s\ndescription %q\n            %q\noptional %v, %v",
				what, resType, dsType, resDesc, dsDesc, resOpt, dsOpt)
		}
	}
	for _, name := range resourceSetRenderAttributes {
		r, d := set.Attributes[name], render.Attributes[name]
		same("stevedore_resourceset."+name, r.GetType().String(), d.GetType().String(),
			r.GetDescription()+r.GetMarkdownDescription(), d.GetDescription()+d.GetMarkdownDescription(), r.IsOptional(), d.IsOptional())
	}
	same("stevedore_resourceset.common_metadata", set.Blocks["common_metadata"].Type().String(), render.Blocks["common_metadata"].Type().String(),
		set.Blocks["common_metadata"].GetDescription(), render.Blocks["common_metadata"].GetDescription(), true, true)
	for _, name := range []string{"chart", "post_renderers"} {
		same("stevedore_helmrelease."+name, rel.Blocks[name].Type().String(), tmpl.Blocks[name].Type().String(), "", "", true, true)
	}
	same("stevedore_helmrelease.values", rel.Attributes["values"].GetType().String(), tmpl.Attributes["values"].GetType().String(),
		"", "", rel.Attributes["values"].IsOptional(), tmpl.Attributes["values"].IsOptional())

	// Validators come over with the attributes.
	resChart := rel.Blocks["chart"].(rschema.SingleNestedBlock)
	dsChart := tmpl.Blocks["chart"].(dschema.SingleNestedBlock)
	for name, a := range resChart.Attributes {
		ra, ok := a.(rschema.StringAttribute)
		if !ok {
			continue
		}
		da := dsChart.Attributes[name].(dschema.StringAttribute)
		if len(ra.Validators) != len(da.Validators) {
			t.Errorf("chart.%s: %d validators, the release's has %d", name, len(da.Validators), len(ra.Validators))
			continue
		}
		for i := range ra.Validators {
			if ra.Validators[i].Description(ctx) != da.Validators[i].Description(ctx) {
				t.Errorf("chart.%s: validator %q, the release's %q", name, da.Validators[i].Description(ctx), ra.Validators[i].Description(ctx))
			}
		}
	}
	if len(dsChart.Attributes["digest"].(dschema.StringAttribute).Validators) == 0 || len(dsChart.Validators) == 0 {
		t.Error("the chart block or chart.digest lost its validators")
	}
}

// TestDataSourceAttribute_refusesDefaults: a default would change what an
// unset attribute means, which a data source cannot express.
func TestDataSourceAttribute_refusesDefaults(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for an attribute with a default")
		}
	}()
	dataSourceAttribute("wait", resourceSetSchema().Attributes["wait"])
}
