# A release installed by the helm CLI (`helm install -n apps web ...`): its
# records are in its own namespace, under its own name. Only the hook
# web-smoke runs, with up to 2 minutes for it.
action "stevedore_helmrelease_test" "web_smoke" {
  config {
    namespace = "apps"
    name      = "web"
    timeout   = "2m"
    filters {
      name = "web-smoke"
    }
  }
}
