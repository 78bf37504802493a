package provider

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	tfresource "github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"
)

// cli.lacks and needsCLI decide by each product's own versions: the numbers
// overlap between OpenTofu and Terraform, and a fix backported to an older
// minor line counts there. The versions are stored as if the binaries had
// reported them, so that no binary runs.
func TestCLIFeature_lacks(t *testing.T) {
	fake := func(product, v string) cli {
		c := cli{name: product + "-" + v, product: product, path: "/nonexistent/" + product + "-" + v}
		cliVersions.Store(c.path, v)
		return c
	}
	for _, tc := range []struct {
		cli     cli
		feature cliFeature
		has     bool
	}{
		{fake("terraform", "1.5.7"), cliMovedAcrossTypes, false},
		{fake("terraform", "1.8.5"), cliMovedAcrossTypes, true},
		{fake("terraform", "1.8.5"), cliMovedAcrossTypesFullSource, true},
		{fake("terraform", "1.8.5"), cliWriteOnly, false},
		{fake("terraform", "1.11.0"), cliWriteOnly, true},
		{fake("terraform", "1.11.4"), cliIdentity, false},
		{fake("terraform", "1.12.0"), cliIdentity, true},
		{fake("opentofu", "1.9.1"), cliMovedAcrossTypes, false},
		{fake("opentofu", "1.10.0"), cliMovedAcrossTypes, true},
		{fake("opentofu", "1.10.0"), cliMovedAcrossTypesFullSource, false},
		{fake("opentofu", "1.11.11"), cliMovedAcrossTypesFullSource, false},
		{fake("opentofu", "1.11.12"), cliMovedAcrossTypesFullSource, true},
		{fake("opentofu", "1.12.3"), cliMovedAcrossTypesFullSource, false},
		{fake("opentofu", "1.12.4"), cliMovedAcrossTypesFullSource, true},
		{fake("opentofu", "1.12.0-beta1"), cliIdentity, true},
		{fake("opentofu", "1.11.0"), cliIdentity, false},
		{fake("opentofu", "1.12.6"), cliWriteOnly, true},
		{fake("terraform", "1.13.3"), cliQuery, false},
		{fake("terraform", "1.14.0"), cliQuery, true},
		{fake("terraform", "1.15.9"), cliActions, true},
		{fake("opentofu", "1.12.6"), cliQuery, false},
		{fake("opentofu", "1.12.6"), cliActions, false},
	} {
		why, err := tc.cli.lacks(tc.feature)
		if err != nil {
			t.Fatal(err)
		}
		if (why == "") != tc.has {
			t.Errorf("%s, %s: lacks %q, want has=%v", tc.cli.name, tc.feature.what, why, tc.has)
		}
		if why != "" && !strings.Contains(why, tc.feature.what) {
			t.Errorf("%s: the reason %q does not name the feature", tc.cli.name, why)
		}
	}

	// needsCLI skips, with the reason, under the run's cli that runUnder
	// binds to it, and refuses to guess without one.
	check := needsCLI(cliWriteOnly, cliIdentity).(cliNeeds)
	var resp tfversion.CheckTerraformVersionResponse
	check.CheckTerraformVersion(context.Background(), tfversion.CheckTerraformVersionRequest{}, &resp)
	if resp.Error == nil {
		t.Errorf("an unbound needsCLI check passed")
	}
	old := fake("terraform", "1.11.2")
	check.cli = &old
	resp = tfversion.CheckTerraformVersionResponse{}
	check.CheckTerraformVersion(context.Background(), tfversion.CheckTerraformVersionRequest{}, &resp)
	if resp.Error != nil || !strings.Contains(resp.Skip, "terraform 1.11.2 lacks resource identity (Terraform >= 1.12.0, OpenTofu >= 1.12.0)") {
		t.Errorf("needsCLI under Terraform 1.11.2: skip %q, error %v", resp.Skip, resp.Error)
	}

	// A test that runs the CLI itself skips with cli.need.
	var sub *testing.T
	t.Run("need", func(t *testing.T) {
		sub = t
		fake("terraform", "1.5.7").need(t, cliMovedAcrossTypes)
		t.Error("need did not skip under Terraform 1.5.7")
	})
	if !sub.Skipped() {
		t.Error("need did not skip under Terraform 1.5.7")
	}

	// runUnder binds each run's cli to the case's needsCLI checks: the same
	// case skips under one CLI and runs under another.
	tc := tfresource.TestCase{TerraformVersionChecks: []tfversion.TerraformVersionCheck{needsCLI(cliIdentity)}}
	for _, run := range []struct {
		cli  cli
		skip bool
	}{{fake("opentofu", "1.11.5"), true}, {fake("opentofu", "1.12.6"), false}} {
		runUnder(t, run.cli, &protocolRecord{}, tc, func(t *testing.T, tc tfresource.TestCase) {
			var resp tfversion.CheckTerraformVersionResponse
			tc.TerraformVersionChecks[0].CheckTerraformVersion(context.Background(), tfversion.CheckTerraformVersionRequest{}, &resp)
			if resp.Error != nil || (resp.Skip != "") != run.skip {
				t.Errorf("%s: skip %q, error %v, want skip=%v", run.cli.name, resp.Skip, resp.Error, run.skip)
			}
		})
	}
}

// Every name in smokeUnderOldestCLI is a test function of this package, so
// that a renamed test does not leave the smoke subset unnoticed.
func TestSmokeUnderOldestCLI_namesTests(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil {
				tests[fn.Name.Name] = true
			}
		}
	}
	if len(smokeUnderOldestCLI) == 0 {
		t.Fatal("the smoke subset is empty")
	}
	for name := range smokeUnderOldestCLI {
		if !strings.HasPrefix(name, "Test") || !tests[name] {
			t.Errorf("smokeUnderOldestCLI names %s, which is no test function of this package", name)
		}
	}
}
