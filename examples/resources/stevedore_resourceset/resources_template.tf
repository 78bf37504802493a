# A multi-document template rendered once per input, with range and if.
resource "stevedore_resourceset" "apps" {
  name      = "apps"
  namespace = "default"

  inputs = [
    { app = "podinfo", replicas = 2, ports = [80, 9898], public = true },
    { app = "redis", replicas = 1, ports = [6379], public = false },
  ]

  resources_template = <<-EOT
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: << inputs.app >>
    spec:
      replicas: << inputs.replicas | int >>
      selector:
        matchLabels: {app: << inputs.app >>}
      template:
        metadata:
          labels: {app: << inputs.app >>}
        spec:
          containers:
          - name: << inputs.app >>
            image: ghcr.io/example/<< inputs.app >>:latest
    << if inputs.public >>
    ---
    apiVersion: v1
    kind: Service
    metadata:
      name: << inputs.app >>
    spec:
      selector: {app: << inputs.app >>}
      ports:
      << range inputs.ports >>
      - name: port-<< . >>
        port: << . >>
      << end >>
    << end >>
  EOT

  # Wait until the Deployments are available (kstatus Current).
  wait    = true
  timeout = "5m"
}
