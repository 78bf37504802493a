# Flux's dependsOn, for objects in the cluster: the install (and every upgrade)
# waits, within `timeout`, until a HelmRelease that Flux still manages is ready
# and cert-manager has written the TLS Secret. While they are not, apply fails
# naming them, installs nothing and counts no failure; the next apply tries
# again. Terraform's depends_on orders the resources of this configuration.
resource "stevedore_helmrelease" "podinfo" {
  name      = "podinfo"
  namespace = "apps"

  chart {
    digest = stevedore_helmchart_artifact.podinfo.digest
  }

  timeout = "10m"

  dependencies {
    api_version = "helm.toolkit.fluxcd.io/v2"
    kind        = "HelmRelease"
    name        = "ingress-nginx"
    namespace   = "flux-system"
    ready       = true # kstatus Current: Ready=True for the generation Flux last saw
  }

  dependencies {
    api_version = "v1"
    kind        = "Secret"
    name        = "podinfo-tls"
    namespace   = "apps"
    ready       = true
    # Every top-level field of the object is a variable: a Secret's type and data.
    ready_expr = "type == 'kubernetes.io/tls' && data[?'tls.crt'].orValue('') != ''"
  }

  values = {
    ingress = { enabled = true, tls = [{ secretName = "podinfo-tls", hosts = ["podinfo.example.com"] }] }
  }
}
