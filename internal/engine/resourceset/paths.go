package resourceset

import (
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// objectPath is the attribute that renders the object id, as precisely as
// the configuration says it: the element of resources (`resources[2]`),
// resources_template, or the same in a step (`steps[1].resources[0]`,
// `steps[1].resources_template`); "" when no one attribute renders it alone.
// spec's inputs are resolved. It renders each attribute again: only error
// paths call it.
func (e *Engine) objectPath(spec *Spec, id string) string {
	type source struct {
		path string
		sub  Spec
	}
	var sources []source
	add := func(prefix string, resources []map[string]any, template string) {
		for j, r := range resources {
			c := *spec
			c.Steps, c.Resources, c.ResourcesTemplate = nil, []map[string]any{r}, ""
			sources = append(sources, source{prefix + fielderr.Index("resources", j), c})
		}
		if template != "" {
			c := *spec
			c.Steps, c.Resources, c.ResourcesTemplate = nil, nil, template
			sources = append(sources, source{prefix + "resources_template", c})
		}
	}
	if len(spec.Steps) == 0 {
		add("", spec.Resources, spec.ResourcesTemplate)
	} else {
		for i, st := range spec.Steps {
			add(fielderr.Index("steps", i)+".", st.Resources, st.ResourcesTemplate)
		}
	}
	for _, s := range sources {
		parts, _, err := e.desired(&s.sub)
		if err != nil {
			continue
		}
		for _, o := range flatten(parts) {
			if kube.ID(o) == id {
				return s.path
			}
		}
	}
	return ""
}
