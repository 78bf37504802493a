module github.com/stevedore-dev/terraform-provider-stevedore/tools/funcsize

go 1.27.0
