# A chart from an OCI registry whose signature is checked with cosign before
# anything is stored: a release never runs an unverified chart.
resource "stevedore_helmchart_artifact" "podinfo" {
  repository = "oci://ghcr.io/stefanprodan/charts"
  chart      = "podinfo"
  version    = ">=6.5.0 <7.0.0"

  verify {
    provider = "cosign"
    match_oidc_identity = [{
      issuer  = "^https://token\\.actions\\.githubusercontent\\.com$"
      subject = "^https://github\\.com/stefanprodan/podinfo.*$"
    }]
  }
}

resource "stevedore_helmrelease" "podinfo" {
  name      = "podinfo"
  namespace = "apps"

  chart {
    digest = stevedore_helmchart_artifact.podinfo.digest
  }
}
