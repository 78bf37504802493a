# A migration from flux-operator: the objects its ResourceSet "tenants" applied
# (labels resourceset.fluxcd.controlplane.io/*) are taken over in place by the
# equivalent set. Disable the ResourceSet's reconciliation first (annotation
# fluxcd.controlplane.io/reconcile: disabled: flux-operator then neither
# applies nor deletes its objects, also when the ResourceSet is deleted); the
# plan warns and lists the objects taken over. See the guide "Migrating from
# flux-operator's ResourceSet".
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
