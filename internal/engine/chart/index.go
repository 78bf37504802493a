package chart

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/chart/indexscan"
	yaml "go.yaml.in/yaml/v3"
)

// Index is the part of a Helm repository index that resolution and download
// need, by chart name. It is what the cache stores: a 20 MB index.yaml keeps
// about a tenth of its bytes here.
type Index struct {
	Entries map[string][]Entry `json:"entries"`
	// Stale, when not empty, says why this is the cached index of a
	// repository that could not be reached. Never stored.
	Stale string `json:"-"`
}

// Entry is one chart version of an index.
type Entry struct {
	Version    string    `json:"v"`
	AppVersion string    `json:"a,omitempty"`
	Created    time.Time `json:"c,omitzero"`
	URLs       []string  `json:"u,omitempty"`
	// Digest is the hex sha256 of the archive, when the index has it.
	Digest string `json:"d,omitempty"`
}

// maxIndexSize bounds an index download, as Helm's getter does not: a
// repository that answers with gigabytes must not fill the cache directory.
const maxIndexSize = 256 << 20

// rawIndex is the fields of index.yaml that ParseIndex decodes; everything
// else (descriptions, maintainers, annotations) is skipped by the decoder
// without being built.
type rawIndex = indexscan.Index

// ParseIndex parses index.yaml (or its JSON form) into an Index. It keeps
// what Helm's repo.LoadIndexFile keeps: entries with a version; a missing
// apiVersion is an error, as it is for Helm.
func ParseIndex(data []byte) (*Index, error) {
	var raw rawIndex
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		if err := json.Unmarshal(trimmed, &raw); err != nil {
			return nil, fmt.Errorf("parse repository index: %w", err)
		}
	} else if scanned, ok := indexscan.Scan(data); ok {
		raw = *scanned
	} else if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("parse repository index: %w", err)
	}
	if raw.APIVersion == "" {
		return nil, errors.New("parse repository index: no API version: not a Helm repository index")
	}
	idx := &Index{Entries: make(map[string][]Entry, len(raw.Entries))}
	for name, list := range raw.Entries {
		out := make([]Entry, 0, len(list))
		for _, r := range list {
			if r.Version == "" {
				continue
			}
			e := Entry{Version: r.Version, AppVersion: r.AppVersion, URLs: r.URLs, Digest: r.Digest}
			if r.Created != "" {
				if t, err := time.Parse(time.RFC3339Nano, r.Created); err == nil {
					e.Created = t
				}
			}
			out = append(out, e)
		}
		idx.Entries[name] = out
	}
	return idx, nil
}

// indexMeta is the cache record of one repository index.
type indexMeta struct {
	URL          string    `json:"url"`
	ETag         string    `json:"etag,omitempty"`
	LastModified string    `json:"lastModified,omitempty"`
	FetchedAt    time.Time `json:"fetchedAt"`
	// Digest is the sha256 of the index.yaml bytes the compact form was
	// parsed from; it keys the in-process memo.
	Digest string `json:"digest"`
}

// memo holds parsed indexes for the life of the process, keyed by URL and
// index digest: a plan of many artifacts from one repository parses and
// reads its index once.
var memo = struct {
	sync.Mutex
	m map[string]*Index
}{m: map[string]*Index{}}

func memoKey(url, digest string) string { return url + "\x00" + digest }

func memoGet(url, digest string) *Index {
	memo.Lock()
	defer memo.Unlock()
	return memo.m[memoKey(url, digest)]
}

func memoPut(url, digest string, idx *Index) {
	memo.Lock()
	defer memo.Unlock()
	// One version per repository: drop the ones this replaces.
	prefix := url + "\x00"
	for k := range memo.m {
		if strings.HasPrefix(k, prefix) {
			delete(memo.m, k)
		}
	}
	memo.m[memoKey(url, digest)] = idx
}

// locks serialises fetches of one cache entry within the process (Terraform
// plans resources in parallel).
var locks sync.Map

func lockFor(key string) func() {
	v, _ := locks.LoadOrStore(key, &sync.Mutex{})
	mu := v.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

func hashKey(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}

// repoIndex returns the index of an HTTP repository: from the process memo
// or the disk cache while it is within the TTL, otherwise after a conditional
// request to the repository.
func (e *Engine) repoIndex(ctx context.Context, repoURL string, auth Auth) (*Index, error) {
	indexURL := strings.TrimSuffix(repoURL, "/") + "/index.yaml"
	// Credentials are part of the key: an index fetched with one set of
	// credentials is not served to a configuration with others.
	dir := filepath.Join(e.cacheDir, "index", hashKey(indexURL+"\x00"+auth.Username+"\x00"+auth.Password))
	unlock := lockFor(dir)
	defer unlock()

	meta, _ := readMeta(filepath.Join(dir, "meta.json"))
	if meta != nil && meta.URL == indexURL && fresh(e.now().Sub(meta.FetchedAt), e.ttl) {
		if idx, err := e.cachedIndex(dir, meta); err == nil {
			return idx, nil
		}
	}

	client, err := httpClient(auth)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, indexURL, nil)
	if err != nil {
		return nil, fieldErr("repository", fmt.Errorf("invalid repository URL: %w", err))
	}
	req.Header.Set("User-Agent", userAgent)
	if auth.Username != "" || auth.Password != "" {
		req.SetBasicAuth(auth.Username, auth.Password)
	}
	haveCache := meta != nil && meta.URL == indexURL && fileExists(filepath.Join(dir, "index.cache"))
	if haveCache {
		if meta.ETag != "" {
			req.Header.Set("If-None-Match", meta.ETag)
		}
		if meta.LastModified != "" {
			req.Header.Set("If-Modified-Since", meta.LastModified)
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		if haveCache && ctx.Err() == nil {
			return e.staleIndex(dir, meta, indexURL, err)
		}
		err = fmt.Errorf("failed to fetch %s: %w", redactURL(indexURL), err)
		if ctx.Err() == nil {
			err = unreachable(err)
		}
		return nil, fieldErr("repository", err)
	}
	defer resp.Body.Close()

	switch {
	case resp.StatusCode >= 500 && haveCache:
		return e.staleIndex(dir, meta, indexURL, httpStatusError(indexURL, resp))
	case resp.StatusCode == http.StatusNotModified && haveCache:
		idx, err := e.cachedIndex(dir, meta)
		if err == nil {
			meta.FetchedAt = e.now()
			_ = writeJSONAtomic(filepath.Join(dir, "meta.json"), meta)
			return idx, nil
		}
		// The cache is unreadable: fetch unconditionally.
		resp.Body.Close()
		return e.refetchIndex(ctx, dir, indexURL, auth, client)
	case resp.StatusCode == http.StatusOK:
		return e.storeIndex(dir, indexURL, resp)
	case resp.StatusCode >= 500:
		return nil, fieldErr("repository", unreachable(httpStatusError(indexURL, resp)))
	default:
		return nil, fieldErr("repository", httpStatusError(indexURL, resp))
	}
}

// staleIndex is the cached index of a repository that cannot be reached
// now (a network error, a server error), as source-controller keeps serving
// its last artifact: marked Stale with why, and not counted as fetched, so
// that the next plan asks the repository again.
func (e *Engine) staleIndex(dir string, meta *indexMeta, indexURL string, cause error) (*Index, error) {
	idx, err := e.cachedIndex(dir, meta)
	if err != nil {
		return nil, fieldErr("repository", unreachable(fmt.Errorf("failed to fetch %s: %w", redactURL(indexURL), cause)))
	}
	cp := *idx
	cp.Stale = fmt.Sprintf("repository %s cannot be reached (%v): using its index cached at %s",
		redactURL(indexURL), cause, meta.FetchedAt.UTC().Format(time.RFC3339))
	return &cp, nil
}

func (e *Engine) refetchIndex(ctx context.Context, dir, indexURL string, auth Auth, client *http.Client) (*Index, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, indexURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", userAgent)
	if auth.Username != "" || auth.Password != "" {
		req.SetBasicAuth(auth.Username, auth.Password)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fieldErr("repository", fmt.Errorf("failed to fetch %s: %w", redactURL(indexURL), err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fieldErr("repository", httpStatusError(indexURL, resp))
	}
	return e.storeIndex(dir, indexURL, resp)
}

func (e *Engine) storeIndex(dir, indexURL string, resp *http.Response) (*Index, error) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxIndexSize+1))
	if err != nil {
		return nil, fieldErr("repository", fmt.Errorf("failed to read %s: %w", redactURL(indexURL), err))
	}
	if len(data) > maxIndexSize {
		return nil, fieldErr("repository", fmt.Errorf("%s is larger than %d bytes", redactURL(indexURL), maxIndexSize))
	}
	idx, err := ParseIndex(data)
	if err != nil {
		return nil, fieldErr("repository", fmt.Errorf("%s: %w", redactURL(indexURL), err))
	}
	sum := sha256.Sum256(data)
	meta := &indexMeta{
		URL:          indexURL,
		ETag:         resp.Header.Get("ETag"),
		LastModified: resp.Header.Get("Last-Modified"),
		FetchedAt:    e.now(),
		Digest:       hex.EncodeToString(sum[:]),
	}
	memoPut(indexURL, meta.Digest, idx)
	// A cache that cannot be written only costs a request next time.
	if err := os.MkdirAll(dir, 0o700); err == nil {
		if data, err := encodeIndex(idx); err == nil && writeFileAtomic(filepath.Join(dir, "index.cache"), data) == nil {
			_ = writeJSONAtomic(filepath.Join(dir, "meta.json"), meta)
		}
	}
	return idx, nil
}

// cachedIndex returns the parsed index of meta from the memo, else from the
// compact form on disk.
func (e *Engine) cachedIndex(dir string, meta *indexMeta) (*Index, error) {
	if idx := memoGet(meta.URL, meta.Digest); idx != nil {
		return idx, nil
	}
	data, err := os.ReadFile(filepath.Join(dir, "index.cache"))
	if err != nil {
		return nil, err
	}
	idx, err := decodeIndex(data)
	if err != nil {
		return nil, err
	}
	memoPut(meta.URL, meta.Digest, idx)
	return idx, nil
}

func readMeta(path string) (*indexMeta, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := &indexMeta{}
	if err := json.Unmarshal(data, m); err != nil {
		return nil, err
	}
	return m, nil
}

// writeJSONAtomic writes v as JSON through a temporary file and a rename, so
// that concurrent readers (another provider process) see the old or the new
// file, never half of one.
func writeJSONAtomic(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, data)
}

func writeFileAtomic(path string, data []byte) error {
	// Private: indexes and charts of private repositories live here.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// fresh reports whether a cache entry of this age is within ttl. An entry
// from the future (a clock set back) is not.
func fresh(age, ttl time.Duration) bool {
	return ttl > 0 && age >= 0 && age < ttl
}
