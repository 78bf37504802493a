# hashicorp/helm's helm_release attributes, as stevedore_helmrelease takes
# them: a list of YAML documents deep-merged in order, Helm --set paths, and
# write-only values that Terraform never stores.
resource "stevedore_helmrelease" "web" {
  name      = "web"
  namespace = "apps"

  chart {
    repository = "https://stefanprodan.github.io/podinfo"
    chart      = "podinfo"
    version    = "6.5.*"
  }

  values = [
    file("${path.module}/values/base.yaml"),
    file("${path.module}/values/production.yaml"),
    yamlencode({ replicaCount = 3 }),
  ]

  set = [
    { name = "image.tag", value = "6.5.4", type = "string" },
    { name = "podAnnotations.prometheus\\.io/scrape", value = "true", type = "string" },
    { name = "ingress.hosts[0].host", value = "web.example.com" },
    { name = "resources", value = jsonencode({ limits = { memory = "256Mi" } }), type = "json" },
  ]
  set_list = [
    { name = "extraArgs", value = ["--level=info", "--port=9898"] },
  ]
  set_sensitive = [
    { name = "redis.password", value = var.redis_password },
  ]

  # Terraform 1.11+ / OpenTofu 1.11+: never stored in state or plan. Bump the
  # version to upgrade the release with a new value.
  values_wo         = { auth = { token = ephemeral.random_password.token.result } }
  values_wo_version = 1
}

variable "redis_password" {
  type      = string
  sensitive = true
}

ephemeral "random_password" "token" {
  length = 32
}
