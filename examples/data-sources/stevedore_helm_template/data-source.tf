# CI renders what the release would install, with no cluster configured, and
# writes it where conftest and kubeconform read it:
#   tofu apply -target=local_file.podinfo_rendered && conftest test rendered/
provider "stevedore" {}

resource "stevedore_helmchart_artifact" "podinfo" {
  repository = "oci://ghcr.io/stefanprodan/charts"
  chart      = "podinfo"
  version    = "6.x"
}

locals {
  podinfo_values = {
    replicaCount = 2
    ingress      = { enabled = true, className = "nginx" }
  }
}

data "stevedore_helm_template" "podinfo" {
  release_name = "podinfo"
  namespace    = "apps"

  # The same chart block, values and post-renderers as the release's.
  chart {
    digest = stevedore_helmchart_artifact.podinfo.digest
  }
  values = local.podinfo_values

  post_renderers {
    kustomize {
      images {
        name    = "ghcr.io/stefanprodan/podinfo"
        new_tag = "6.7.1"
      }
    }
  }

  # The cluster the chart is rendered for.
  kube_version = "v1.31.0"
  api_versions = ["monitoring.coreos.com/v1/ServiceMonitor"]
}

# One file per object, for policy checks.
resource "local_file" "podinfo_rendered" {
  for_each = {
    for o in data.stevedore_helm_template.podinfo.objects :
    lower("${o.kind}-${o.namespace}-${o.name}") => o.manifest
  }
  filename = "${path.module}/rendered/${each.key}.yaml"
  content  = each.value
}
