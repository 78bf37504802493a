# A chart artifact and its release: a new chart version in range shows in the
# plan as chart_version "6.5.3" -> "6.5.4" on both resources.
resource "stevedore_helmchart_artifact" "podinfo" {
  repository = "oci://ghcr.io/stefanprodan/charts"
  chart      = "podinfo"
  version    = "6.x"
}

resource "stevedore_helmrelease" "podinfo" {
  name             = "podinfo"
  namespace        = "flux-system"
  target_namespace = "apps" # release name: apps-podinfo

  chart {
    digest = stevedore_helmchart_artifact.podinfo.digest
  }

  values = {
    replicaCount = 2
    ingress      = { enabled = false }
  }

  # Merged in order, under `values` (a target_path inside a map that only
  # `values` has is the exception: it wins there, as in helm-controller); only
  # the digest of the result is kept.
  values_from {
    kind = "ConfigMap"
    name = "podinfo-values"
  }
  values_from {
    kind        = "Secret"
    name        = "podinfo-token"
    values_key  = "token"
    target_path = "auth.token"
    optional    = true
  }

  install {
    create_namespace = true
  }
}
