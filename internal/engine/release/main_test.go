package release

import (
	"testing"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// TestMain starts one local cluster for the package's tests (none under -short).
func TestMain(m *testing.M) { testenv.Main(m) }
