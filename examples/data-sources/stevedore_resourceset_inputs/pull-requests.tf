variable "github_token" {
  type      = string
  sensitive = true
}

# Open pull requests labeled deploy/preview, as flux-operator's
# GitHubPullRequest provider exports them: id (the number), sha, branch,
# title, author, labels.
data "stevedore_resourceset_inputs" "prs" {
  type  = "GitHubPullRequest"
  url   = "https://github.com/example/app"
  token = var.github_token

  filter {
    labels = ["deploy/preview"]
  }

  skip {
    labels = ["deploy/pause"]
  }

  default_values = {
    chart = "charts/app"
  }
}

# The main branch, through the Static type, next to the pull requests:
# concat() of several data sources is flux-operator's union of providers.
data "stevedore_resourceset_inputs" "main" {
  type           = "Static"
  uid            = "main"
  default_values = { branch = "main", sha = "", chart = "charts/app" }
}

resource "stevedore_resourceset" "app_prs" {
  name      = "app-prs"
  namespace = "flux-system"

  inputs = concat(
    data.stevedore_resourceset_inputs.main.inputs,
    data.stevedore_resourceset_inputs.prs.inputs,
  )

  resources_template = <<-EOT
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: app-<< inputs.id >>
    data:
      branch: "<< inputs.branch >>"
      sha: "<< inputs.sha >>"
  EOT
}
