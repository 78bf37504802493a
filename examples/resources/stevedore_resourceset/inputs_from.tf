# On a cluster that still runs flux-operator: one preview environment per
# input exported by the ResourceSetInputProviders of the namespace, read at
# plan, next to a literal input.
resource "stevedore_resourceset" "previews" {
  name      = "previews"
  namespace = "apps"

  inputs = [
    { id = "main", branch = "main" },
  ]

  # A provider by name.
  inputs_from {
    api_version = "fluxcd.controlplane.io/v1"
    kind        = "ResourceSetInputProvider"
    name        = "podinfo-pull-requests"
  }

  # Providers by label selector.
  inputs_from {
    selector {
      match_labels = { app = "podinfo" }
      match_expressions {
        key      = "environment"
        operator = "In"
        values   = ["dev", "staging"]
      }
    }
  }

  input_strategy {
    name = "Flatten" # the default
  }

  resources_template = <<-EOT
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: preview-<< inputs.id >>
    data:
      branch: << inputs.branch | quote >>
      # Every input names its provider: a ResourceSetInputProvider, or this
      # set (kind ResourceSet) for the literal inputs.
      source: << printf "%s/%s" inputs.provider.kind inputs.provider.name | quote >>
  EOT
}
