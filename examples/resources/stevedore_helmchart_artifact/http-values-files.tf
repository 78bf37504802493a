# A chart from a private Helm repository with basic auth and a private CA. The
# chart's own values.yaml and its values-prod.yaml are merged (the last one
# wins) and packaged into the artifact: revision is "<version>+<12 hex>" of the
# merged values, and the digest is the same on every machine.
resource "stevedore_helmchart_artifact" "app" {
  repository   = "https://charts.example.com/stable"
  chart        = "app"
  version      = ">=2.1.0 <3.0.0"
  values_files = ["values.yaml", "values-prod.yaml"]

  username = "ci"
  password = var.chart_repository_password
  ca_pem   = file("${path.module}/ca.pem")
}

variable "chart_repository_password" {
  type      = string
  sensitive = true
}
