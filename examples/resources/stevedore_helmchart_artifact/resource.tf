# The highest 6.x podinfo chart of a Helm repository. A new 6.x version shows in
# the next plan as chart_version "6.5.3" -> "6.5.4".
resource "stevedore_helmchart_artifact" "podinfo" {
  repository = "https://stefanprodan.github.io/podinfo"
  chart      = "podinfo"
  version    = "6.x"
}
