package provider

import (
	"fmt"

	dschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	rschema "github.com/hashicorp/terraform-plugin-framework/resource/schema"
)

// The data sources that render what a resource would apply take the
// resource's own attributes: dataSourceAttribute and dataSourceBlock convert
// a resource's schema to a data source's, with the same types, descriptions
// and validators, so that a configuration copies over as it is and one schema
// says what each attribute means. Plan modifiers have no data source
// equivalent and are dropped; a default, which would change what an unset
// attribute means, is a bug here and panics when the schema is built (every
// test that builds it fails).

func dataSourceAttributes(attrs map[string]rschema.Attribute) map[string]dschema.Attribute {
	out := make(map[string]dschema.Attribute, len(attrs))
	for name, a := range attrs {
		out[name] = dataSourceAttribute(name, a)
	}
	return out
}

func dataSourceBlocks(blocks map[string]rschema.Block) map[string]dschema.Block {
	if len(blocks) == 0 {
		return nil
	}
	out := make(map[string]dschema.Block, len(blocks))
	for name, b := range blocks {
		out[name] = dataSourceBlock(name, b)
	}
	return out
}

// dataSourceAttribute converts the resource attribute name.
func dataSourceAttribute(name string, a rschema.Attribute) dschema.Attribute {
	switch a := a.(type) {
	case rschema.StringAttribute:
		noDefault(name, a.Default == nil)
		return dschema.StringAttribute{Required: a.Required, Optional: a.Optional, Computed: a.Computed, Sensitive: a.Sensitive,
			Description: a.Description, MarkdownDescription: a.MarkdownDescription, DeprecationMessage: a.DeprecationMessage,
			CustomType: a.CustomType, Validators: a.Validators}
	case rschema.BoolAttribute:
		noDefault(name, a.Default == nil)
		return dschema.BoolAttribute{Required: a.Required, Optional: a.Optional, Computed: a.Computed, Sensitive: a.Sensitive,
			Description: a.Description, MarkdownDescription: a.MarkdownDescription, DeprecationMessage: a.DeprecationMessage,
			CustomType: a.CustomType, Validators: a.Validators}
	case rschema.Int64Attribute:
		noDefault(name, a.Default == nil)
		return dschema.Int64Attribute{Required: a.Required, Optional: a.Optional, Computed: a.Computed, Sensitive: a.Sensitive,
			Description: a.Description, MarkdownDescription: a.MarkdownDescription, DeprecationMessage: a.DeprecationMessage,
			CustomType: a.CustomType, Validators: a.Validators}
	case rschema.Float64Attribute:
		noDefault(name, a.Default == nil)
		return dschema.Float64Attribute{Required: a.Required, Optional: a.Optional, Computed: a.Computed, Sensitive: a.Sensitive,
			Description: a.Description, MarkdownDescription: a.MarkdownDescription, DeprecationMessage: a.DeprecationMessage,
			CustomType: a.CustomType, Validators: a.Validators}
	case rschema.DynamicAttribute:
		noDefault(name, a.Default == nil)
		return dschema.DynamicAttribute{Required: a.Required, Optional: a.Optional, Computed: a.Computed, Sensitive: a.Sensitive,
			Description: a.Description, MarkdownDescription: a.MarkdownDescription, DeprecationMessage: a.DeprecationMessage,
			CustomType: a.CustomType, Validators: a.Validators}
	case rschema.ListAttribute:
		noDefault(name, a.Default == nil)
		return dschema.ListAttribute{ElementType: a.ElementType, Required: a.Required, Optional: a.Optional, Computed: a.Computed,
			Sensitive: a.Sensitive, Description: a.Description, MarkdownDescription: a.MarkdownDescription,
			DeprecationMessage: a.DeprecationMessage, CustomType: a.CustomType, Validators: a.Validators}
	case rschema.MapAttribute:
		noDefault(name, a.Default == nil)
		return dschema.MapAttribute{ElementType: a.ElementType, Required: a.Required, Optional: a.Optional, Computed: a.Computed,
			Sensitive: a.Sensitive, Description: a.Description, MarkdownDescription: a.MarkdownDescription,
			DeprecationMessage: a.DeprecationMessage, CustomType: a.CustomType, Validators: a.Validators}
	case rschema.ListNestedAttribute:
		noDefault(name, a.Default == nil)
		return dschema.ListNestedAttribute{
			NestedObject: dschema.NestedAttributeObject{Attributes: dataSourceAttributes(a.NestedObject.Attributes),
				CustomType: a.NestedObject.CustomType, Validators: a.NestedObject.Validators},
			Required: a.Required, Optional: a.Optional, Computed: a.Computed, Sensitive: a.Sensitive,
			Description: a.Description, MarkdownDescription: a.MarkdownDescription, DeprecationMessage: a.DeprecationMessage,
			CustomType: a.CustomType, Validators: a.Validators}
	case rschema.SingleNestedAttribute:
		noDefault(name, a.Default == nil)
		return dschema.SingleNestedAttribute{Attributes: dataSourceAttributes(a.Attributes),
			Required: a.Required, Optional: a.Optional, Computed: a.Computed, Sensitive: a.Sensitive,
			Description: a.Description, MarkdownDescription: a.MarkdownDescription, DeprecationMessage: a.DeprecationMessage,
			CustomType: a.CustomType, Validators: a.Validators}
	}
	panic(fmt.Sprintf("data source schema: attribute %q is a %T, which dataSourceAttribute does not convert", name, a))
}

// dataSourceBlock converts the resource block name.
func dataSourceBlock(name string, b rschema.Block) dschema.Block {
	switch b := b.(type) {
	case rschema.SingleNestedBlock:
		return dschema.SingleNestedBlock{Attributes: dataSourceAttributes(b.Attributes), Blocks: dataSourceBlocks(b.Blocks),
			Description: b.Description, MarkdownDescription: b.MarkdownDescription, DeprecationMessage: b.DeprecationMessage,
			CustomType: b.CustomType, Validators: b.Validators}
	case rschema.ListNestedBlock:
		return dschema.ListNestedBlock{
			NestedObject: dschema.NestedBlockObject{Attributes: dataSourceAttributes(b.NestedObject.Attributes),
				Blocks: dataSourceBlocks(b.NestedObject.Blocks), CustomType: b.NestedObject.CustomType, Validators: b.NestedObject.Validators},
			Description: b.Description, MarkdownDescription: b.MarkdownDescription, DeprecationMessage: b.DeprecationMessage,
			CustomType: b.CustomType, Validators: b.Validators}
	}
	panic(fmt.Sprintf("data source schema: block %q is a %T, which dataSourceBlock does not convert", name, b))
}

func noDefault(name string, ok bool) {
	if !ok {
		panic(fmt.Sprintf("data source schema: attribute %q has a default, which a data source cannot have", name))
	}
}
