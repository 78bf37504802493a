package provider

import (
	"testing"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

func TestMain(m *testing.M) {
	setCLIEnv()
	testenv.Main(m)
}
