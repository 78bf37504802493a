# An inline chart, as a release's chart block takes it: resolved, fetched
# and verified into the provider's cache when the data source is read.
data "stevedore_helm_template" "ingress" {
  release_name = "ingress-nginx"
  namespace    = "ingress"
  include_crds = true
  skip_tests   = true

  chart {
    repository = "https://kubernetes.github.io/ingress-nginx"
    chart      = "ingress-nginx"
    version    = "4.x"
  }
  values = yamlencode({ controller = { replicaCount = 2 } })
}

output "ingress_notes" {
  value = data.stevedore_helm_template.ingress.notes
}
