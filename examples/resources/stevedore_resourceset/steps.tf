# Run the database migration of a version before the app of that version is
# deployed: step 1's Job must complete before step 2 is applied.
resource "stevedore_resourceset" "app" {
  name      = "my-app"
  namespace = "apps"
  inputs    = [{ version = "v1.0.0" }]
  wait      = true # health-check the last step too

  steps = [
    {
      name    = "db-migration"
      timeout = "5m"
      resources = [{
        apiVersion = "batch/v1"
        kind       = "Job"
        # A new name per version: a Job's pod template cannot change.
        metadata = { name = "db-migration-<< inputs.version | replace \".\" \"-\" >>" }
        spec = {
          backoffLimit = 0
          template = {
            spec = {
              restartPolicy = "Never"
              containers    = [{ name = "migration", image = "ghcr.io/org/my-app:<< inputs.version >>", args = ["migrate"] }]
            }
          }
        }
      }]
    },
    {
      name               = "app-deploy"
      timeout            = "10m"
      resources_template = <<-EOT
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: my-app
        spec:
          replicas: 2
          selector:
            matchLabels: {app: my-app}
          template:
            metadata:
              labels: {app: my-app}
            spec:
              containers:
                - name: app
                  image: ghcr.io/org/my-app:<< inputs.version >>
      EOT
    },
  ]
}
