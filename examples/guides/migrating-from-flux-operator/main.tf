# The ResourceSet being migrated:
#
#   apiVersion: fluxcd.controlplane.io/v1
#   kind: ResourceSet
#   metadata:
#     name: tenants
#     namespace: flux-system
#     annotations: { fluxcd.controlplane.io/reconcile: disabled } # step 1
#   spec:
#     inputs: [{ tenant: team-a }, { tenant: team-b }]
#     resourcesTemplate: |
#       apiVersion: v1
#       kind: ConfigMap
#       metadata: { name: << inputs.tenant >>-config, namespace: flux-system }
#       data: { owner: << inputs.tenant >> }
resource "stevedore_resourceset" "tenants" {
  name      = "tenants"
  namespace = "flux-system"

  # The objects the ResourceSet applied carry its labels
  # (resourceset.fluxcd.controlplane.io/name and /namespace): without this,
  # the plan refuses them, naming the ResourceSet. Remove it once the
  # migration is applied.
  take_over_from = ["flux-operator"]

  inputs             = [{ tenant = "team-a" }, { tenant = "team-b" }]
  resources_template = <<-EOT
    apiVersion: v1
    kind: ConfigMap
    metadata: { name: << inputs.tenant >>-config, namespace: flux-system }
    data: { owner: << inputs.tenant >> }
  EOT
}
