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
      # Inputs of a provider name it; literal inputs have no provider key.
      source: << if hasKey inputs "provider" >><< inputs.provider.name | quote >><< else >>"inputs"<< end >>
  EOT
}
