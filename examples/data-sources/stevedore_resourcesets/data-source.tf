# Every resource set in the cluster: stevedore_resourcesets' (found by their
# objects' labels) and flux-operator's ResourceSets.
data "stevedore_resourcesets" "all" {}

# The stevedore sets of flux-system, imported into resource blocks by their
# import ID (Terraform 1.7+, OpenTofu 1.7+). A flux-operator ResourceSet's
# import ID is "flux-operator:<namespace>/<name>": its import writes the
# ResourceSet's spec, with take_over_from = ["flux-operator"], and the next
# apply takes its objects over (see the flux-operator migration guide).
data "stevedore_resourcesets" "flux_system" {
  namespace = "flux-system"
  owner     = "stevedore"
}

import {
  for_each = { for s in data.stevedore_resourcesets.flux_system.resource_sets : s.name => s }
  to       = stevedore_resourceset.sets[each.key]
  id       = each.value.import_id
}

resource "stevedore_resourceset" "sets" {
  for_each  = { for s in data.stevedore_resourcesets.flux_system.resource_sets : s.name => s }
  name      = each.value.name
  namespace = each.value.namespace
  # Each set's own templates, from files named after it.
  resources_template = file("sets/${each.key}.yaml")
}
