# A migration from flux-operator: the objects its ResourceSet "tenants" applied
# (labels resourceset.fluxcd.controlplane.io/*) are taken over in place by the
# equivalent set. Suspend the ResourceSet, or delete it with prune disabled,
# before the apply; the plan warns and lists the objects taken over.
resource "stevedore_resourceset" "tenants" {
  name           = "tenants"
  namespace      = "flux-system"
  take_over_from = ["flux-operator"]

  inputs             = [{ tenant = "team-a" }, { tenant = "team-b" }]
  resources_template = <<-EOT
    apiVersion: v1
    kind: Namespace
    metadata:
      name: << inputs.tenant >>
  EOT
}
