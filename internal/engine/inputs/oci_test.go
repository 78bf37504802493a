package inputs

import (
	"context"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func TestFetch_ociTagsFilteredWithDigests(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	digests := map[string]string{}
	for _, tag := range []string{"1.0.0", "1.1.0", "v2.0.0-rc.1", "latest"} {
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.ParseReference(host+"/apps/web:"+tag, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
		d, _ := img.Digest()
		digests[tag] = d.String()
	}
	in := func(tag string) map[string]any {
		return map[string]any{"id": ID(tag), "tag": tag, "digest": digests[tag], "env": "dev"}
	}
	for _, tc := range []struct {
		name string
		f    Filter
		want []map[string]any
	}{
		{"all, reverse lexical", Filter{}, []map[string]any{in("v2.0.0-rc.1"), in("latest"), in("1.1.0"), in("1.0.0")}},
		{"latest semver", Filter{Semver: ">=1.0.0", Limit: 1}, []map[string]any{in("1.1.0")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Fetch(context.Background(), Spec{
				Type: TypeOCIArtifactTag, URL: "oci://" + host + "/apps/web", Insecure: true, Filter: tc.f,
				DefaultValues: map[string]any{"env": "dev"},
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
	t.Run("missing repository", func(t *testing.T) {
		got, err := Fetch(context.Background(), Spec{Type: TypeOCIArtifactTag, URL: "oci://" + host + "/apps/none", Insecure: true})
		if err == nil {
			t.Fatalf("want an error, got %v", got)
		}
	})
}
