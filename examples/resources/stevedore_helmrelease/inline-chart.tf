# The chart given inline, with the attributes of stevedore_helmchart_artifact:
# the release resolves the constraint and fetches the chart into the provider's
# cache at plan, so a new version in range shows in the release's own plan as
# chart_version "6.5.3" -> "6.5.4", with the digest apply will install.
resource "stevedore_helmrelease" "podinfo" {
  name      = "podinfo"
  namespace = "apps"

  chart {
    repository = "https://stefanprodan.github.io/podinfo"
    chart      = "podinfo"
    version    = "6.5.x"
  }

  values = yamldecode(file("${path.module}/podinfo-values.yaml"))
}
