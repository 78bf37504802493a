# CI renders a set with no cluster configured: the objects and the inventory
# that stevedore_resourceset would apply, for conftest and kubeconform.
provider "stevedore" {}

data "stevedore_resourceset_inputs" "tenants" {
  type           = "Static"
  default_values = { tenant = "team-a" }
}

locals {
  # The set's attributes, shared by the render and the resource.
  tenants = {
    name               = "tenants"
    namespace          = "flux-system"
    inputs             = concat(data.stevedore_resourceset_inputs.tenants.inputs, [{ id = "2", tenant = "team-b" }])
    resources_template = <<-EOT
      apiVersion: v1
      kind: Namespace
      metadata:
        name: << inputs.tenant >>
      ---
      apiVersion: helm.toolkit.fluxcd.io/v2
      kind: HelmRelease
      metadata:
        name: podinfo
        namespace: << inputs.tenant >>
      spec:
        interval: 1h
        chartRef:
          kind: OCIRepository
          name: podinfo
    EOT
  }
}

data "stevedore_resourceset_render" "tenants" {
  name               = local.tenants.name
  namespace          = local.tenants.namespace
  inputs             = local.tenants.inputs
  resources_template = local.tenants.resources_template

  common_metadata {
    labels = { "app.kubernetes.io/part-of" = "tenants" }
  }

  # Flux's kinds are not built into Kubernetes: say how they are scoped.
  api_resources = [
    { api_version = "helm.toolkit.fluxcd.io/v2", kind = "HelmRelease", namespaced = true },
  ]
}

resource "local_file" "tenants_rendered" {
  filename = "${path.module}/rendered/tenants.yaml"
  content  = join("---\n", data.stevedore_resourceset_render.tenants.objects[*].manifest)
}

output "tenants_inventory" {
  value = data.stevedore_resourceset_render.tenants.inventory[*].id
}
