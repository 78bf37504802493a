package inputs

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// ociRepository parses oci://<registry>/<repository>.
func ociRepository(raw string, insecure bool) (name.Repository, error) {
	rest, ok := strings.CutPrefix(raw, "oci://")
	if !ok {
		return name.Repository{}, fmt.Errorf("invalid OCI URL %q: must start with oci://", raw)
	}
	if !strings.Contains(strings.Trim(rest, "/"), "/") {
		return name.Repository{}, fmt.Errorf("invalid OCI URL %q: must include the repository path after the registry host", raw)
	}
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	repo, err := name.NewRepository(strings.Trim(rest, "/"), opts...)
	if err != nil {
		return name.Repository{}, fmt.Errorf("invalid OCI URL %q: %v", raw, err)
	}
	return repo, nil
}

// fetchOCITags lists the repository's tags, selects them as flux-operator
// does, and exports id (checksum of the tag), tag and digest (of the
// manifest the tag points at) for each.
func fetchOCITags(ctx context.Context, s Spec) ([]map[string]any, error) {
	repo, err := ociRepository(s.URL, s.Insecure)
	if err != nil {
		return nil, err
	}
	opts, err := ociOptions(ctx, s.Auth)
	if err != nil {
		return nil, err
	}
	tags, err := remote.List(repo, opts...)
	if err != nil {
		return nil, fmt.Errorf("list the tags of %s: %w", repo, err)
	}
	tags = selectTags(tags, s.Filter)
	out := make([]map[string]any, 0, len(tags))
	for _, tag := range tags {
		ref := repo.Tag(tag)
		desc, err := remote.Head(ref, opts...)
		if err != nil {
			// Some registries answer no HEAD; crane.Digest falls back the same way.
			d, gerr := remote.Get(ref, opts...)
			if gerr != nil {
				return nil, fmt.Errorf("digest of %s: %w", ref, gerr)
			}
			desc = &d.Descriptor
		}
		out = append(out, map[string]any{"id": ID(tag), "tag": tag, "digest": desc.Digest.String()})
	}
	return out, nil
}

func ociOptions(ctx context.Context, a Auth) ([]remote.Option, error) {
	opts := []remote.Option{remote.WithContext(ctx)}
	switch {
	case a.Token != "":
		opts = append(opts, remote.WithAuth(authn.FromConfig(authn.AuthConfig{RegistryToken: a.Token})))
	case a.Username != "":
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: a.Username, Password: a.Password}))
	}
	cfg, err := a.tlsConfig()
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		tr := remote.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = cfg
		opts = append(opts, remote.WithTransport(tr))
	}
	return opts, nil
}
