# Apply only once a Secret written by another system says the database is ready.
resource "stevedore_resourceset" "app" {
  name      = "app"
  namespace = "default"

  dependencies {
    api_version = "v1"
    kind        = "Secret"
    name        = "db-status"
    namespace   = "default"
    ready       = true
    ready_expr  = "base64.decode(data.?ready.orValue('')) == b'true'"
  }

  dependencies {
    api_version = "apps/v1"
    kind        = "Deployment"
    name        = "postgres"
    namespace   = "default"
    ready       = true # kstatus Current
  }

  resources_template = <<-EOT
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: app-config
    data:
      database: postgres.default.svc
  EOT
}
