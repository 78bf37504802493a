package provider

import (
	"errors"
	"slices"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
)

// specBuilder reads a model's framework values into the plain Go values of
// an engine's Spec: the one way every resource and data source builds its
// spec. A null value reads as Go's zero value; an unknown one (plan time)
// too, and its attribute is recorded by name, in fielderr's syntax
// (`install.timeout`, `filter.labels`), so that the spec is known only when
// no value it needs is unknown, and a check of a field that is not known yet
// can be left for later. Diagnostics are collected on the attributes they are
// about. Defaults are not the builder's to decide: each engine's
// Spec.withDefaults fills them in.
//
// A builder made by under shares its record with its parent: it reads the
// attributes of a block, named under the block's name.
type specBuilder struct {
	*specRecord
	prefix string
}

// specRecord is what the builders of one spec collect.
type specRecord struct {
	unknown []string
	diags   diag.Diagnostics
}

func newSpecBuilder() *specBuilder { return &specBuilder{specRecord: &specRecord{}} }

// under is a builder for the block (or list element) name.
func (b *specBuilder) under(name string) *specBuilder {
	return &specBuilder{specRecord: b.specRecord, prefix: b.name(name)}
}

// name is the full name of the attribute name read by b.
func (b *specBuilder) name(name string) string {
	if b.prefix == "" {
		return name
	}
	return b.prefix + "." + name
}

// unknownAt records that the attribute name is not known yet.
func (b *specBuilder) unknownAt(name string) { b.unknown = append(b.unknown, b.name(name)) }

// isUnknown reports whether the attribute name was read unknown.
func (b *specBuilder) isUnknown(name string) bool { return slices.Contains(b.unknown, b.name(name)) }

// known reports whether every value read so far was known.
func (b *specBuilder) known() bool { return len(b.unknown) == 0 }

// result is what a spec conversion returns besides the spec.
func (b *specBuilder) result() (bool, diag.Diagnostics) { return b.known(), b.diags }

// unknownIf records the attribute name as unknown when err says a value
// was (errUnknownValue), and returns err otherwise.
func (b *specBuilder) unknownIf(name string, err error) error {
	if errors.Is(err, errUnknownValue) {
		b.unknownAt(name)
		return nil
	}
	return err
}

// read records the attribute name as unknown when v is, and reports whether
// v holds a value (known and not null).
func (b *specBuilder) read(name string, v attr.Value) bool {
	if v.IsUnknown() {
		b.unknownAt(name)
		return false
	}
	return !v.IsNull()
}

func (b *specBuilder) str(name string, v types.String) string {
	b.read(name, v)
	return v.ValueString()
}

func (b *specBuilder) boolean(name string, v types.Bool) bool {
	b.read(name, v)
	return v.ValueBool()
}

// optBool is nil when v is null or unknown.
func (b *specBuilder) optBool(name string, v types.Bool) *bool {
	if !b.read(name, v) {
		return nil
	}
	x := v.ValueBool()
	return &x
}

func (b *specBuilder) integer(name string, v types.Int64) int64 {
	b.read(name, v)
	return v.ValueInt64()
}

// duration reads a Go duration; "" and null are zero.
func (b *specBuilder) duration(name string, v types.String) time.Duration {
	s := b.str(name, v)
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		// The schema validates durations; this is a last resort.
		b.diags.AddAttributeError(attributePath(b.name(name)), "Invalid duration", err.Error())
	}
	return d
}

// strings reads a list of strings; a null list is nil. An unknown element
// leaves the list unknown; a null one is an error on the element.
func (b *specBuilder) strings(name string, v types.List) []string {
	if !b.read(name, v) {
		return nil
	}
	var out []string
	for i, e := range v.Elements() {
		s, ok := e.(types.String)
		switch {
		case !ok || s.IsUnknown():
			b.unknownAt(name)
		case s.IsNull():
			b.diags.AddAttributeError(attributePath(fielderr.Index(b.name(name), i)), "Invalid value", b.name(name)+" must not hold null")
		default:
			out = append(out, s.ValueString())
		}
	}
	return out
}

// stringMap reads a map of strings; a null map is nil. An unknown element
// leaves the map unknown; a null one is left out, as a key not given.
func (b *specBuilder) stringMap(name string, v types.Map) map[string]string {
	if !b.read(name, v) {
		return nil
	}
	out := make(map[string]string, len(v.Elements()))
	for k, e := range v.Elements() {
		s, ok := e.(types.String)
		switch {
		case !ok || s.IsUnknown():
			b.unknownAt(name)
		case !s.IsNull():
			out[k] = s.ValueString()
		}
	}
	return out
}

// objects reads a dynamic attribute that holds a list of objects (goObjects);
// the error, about the attribute or one of its elements, is the caller's to
// report.
func (b *specBuilder) objects(name string, v attr.Value) ([]map[string]any, error) {
	out, err := goObjects(v, b.name(name))
	return out, b.unknownIf(name, err)
}
