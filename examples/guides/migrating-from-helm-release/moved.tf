# Before (hashicorp/helm):
#
# resource "helm_release" "web" {
#   name          = "web"
#   namespace     = "apps"
#   repository    = "https://stefanprodan.github.io/podinfo"
#   chart         = "podinfo"
#   version       = "6.5.4"
#   values        = [file("values.yaml")]
#   set           = [{ name = "replicaCount", value = "2" }]
#   set_sensitive = [{ name = "redis.password", value = var.redis_password }]
# }

moved {
  from = helm_release.web
  to   = stevedore_helmrelease.web
}

resource "stevedore_helmrelease" "web" {
  name      = "web"
  namespace = "apps"
  chart {
    repository = "https://stefanprodan.github.io/podinfo"
    chart      = "podinfo"
    version    = "6.5.4"
  }
  values        = [file("values.yaml")]
  set           = [{ name = "replicaCount", value = "2" }]
  set_sensitive = [{ name = "redis.password", value = var.redis_password }]
}
