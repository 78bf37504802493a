provider "stevedore" {
  kubernetes {
    config_path    = "~/.kube/config"
    config_context = "production"
  }

  # Credentials for chart sources that do not carry their own.
  registries = [
    {
      url      = "oci://ghcr.io/my-org"
      username = "ci-bot"
      password = var.ghcr_token
    },
  ]
}

variable "ghcr_token" {
  type      = string
  sensitive = true
}
