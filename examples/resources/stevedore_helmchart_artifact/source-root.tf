# A Flux HelmChart of a GitRepository, translated field by field:
#
#   spec:
#     chart: ./charts/app
#     valuesFiles:
#       - ./charts/app/values.yaml
#       - ./env/prod/values.yaml
#
# source_root is the checkout (the GitRepository's artifact). With it,
# source_path and values_files are relative to the root, as source-controller
# resolves them: the values files may be anywhere in the source, nothing is
# copied, and no path may leave the root ("../" past it, absolute paths and
# symbolic links out of it are errors). The environment's values win over the
# chart's own; a change to either shows in the plan as a new revision.
resource "stevedore_helmchart_artifact" "app_prod" {
  source_root = "${path.module}/.."
  source_path = "./charts/app"
  values_files = [
    "./charts/app/values.yaml",
    "./env/prod/values.yaml",
  ]
}
