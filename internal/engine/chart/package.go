package chart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"sigs.k8s.io/yaml"
)

// packageTime is the modification time of every entry of a packaged chart,
// so that the same files give the same bytes on any machine, at any time.
var packageTime = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// file is one file of a chart, by its path inside the chart.
type file struct {
	name string
	data []byte
}

// loadArchive loads and checks a chart archive with Helm's rules (paths
// inside the chart, size limits, a valid Chart.yaml).
func loadArchive(name string, data []byte) (*chart.Chart, error) {
	ch, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("chart '%s' is not a valid chart archive: %w", name, err)
	}
	if err := ch.Validate(); err != nil {
		return nil, fmt.Errorf("chart '%s' is not a valid chart: %w", name, err)
	}
	if err := supportedAPI(ch); err != nil {
		return nil, fmt.Errorf("chart '%s': %w", name, err)
	}
	return ch, nil
}

// chartFiles returns the files of a loaded chart (its Raw files, subcharts
// included), sorted by name.
func chartFiles(ch *chart.Chart) []file {
	files := make([]file, 0, len(ch.Raw))
	for _, f := range ch.Raw {
		files = append(files, file{name: f.Name, data: f.Data})
	}
	sortFiles(files)
	return files
}

func sortFiles(files []file) {
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
}

// mergeValues merges the values files in order, the last one winning, as
// Flux does: "values.yaml" is the chart's own values, every other name a file
// of the chart (or, for a local source, of the chart directory or the source
// root: lookup finds it). where names what the paths are relative to, for
// errors ("chart 'podinfo'", "source_root '...'"). It returns the merged
// values and the files used. Errors name the element of values_files.
func mergeValues(where string, paths []string, ignoreMissing bool, lookup func(string) ([]byte, bool, error)) (map[string]any, []string, error) {
	merged := map[string]any{}
	var used []string
	for i, p := range paths {
		data, ok, err := lookup(p)
		if err != nil {
			return nil, nil, elemErr("values_files", i, fmt.Errorf("%s: values file '%s': %w", where, p, err))
		}
		if !ok {
			if ignoreMissing {
				continue
			}
			return nil, nil, elemErr("values_files", i, fmt.Errorf("no values file found at path '%s' in %s", p, where))
		}
		values := map[string]any{}
		if err := yaml.Unmarshal(data, &values); err != nil {
			return nil, nil, elemErr("values_files", i, fmt.Errorf("failed to parse values file '%s' of %s: %w", p, where, err))
		}
		merged = mergeMaps(merged, values)
		used = append(used, p)
	}
	return merged, used, nil
}

// mergeMaps merges b into a copy of a, recursively for maps, b winning.
func mergeMaps(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if vm, ok := v.(map[string]any); ok {
			if am, ok := out[k].(map[string]any); ok {
				out[k] = mergeMaps(am, vm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// valuesDigest is the YAML of the merged values (keys sorted) and the hex
// sha256 of it.
func valuesDigest(values map[string]any) ([]byte, string, error) {
	data, err := yaml.Marshal(values)
	if err != nil {
		return nil, "", fmt.Errorf("serialise merged values: %w", err)
	}
	sum := sha256.Sum256(data)
	return data, hex.EncodeToString(sum[:]), nil
}

// withMetadata returns version with its build metadata replaced by meta, as
// Flux's builder does with semver's SetMetadata.
func withMetadata(version, meta string) (string, error) {
	if meta == "" {
		return version, nil
	}
	v, err := semver.NewVersion(version)
	if err != nil {
		return "", fmt.Errorf("chart version '%s' is not semver: %w", version, err)
	}
	nv, err := v.SetMetadata(meta)
	if err != nil {
		return "", fmt.Errorf("chart version '%s' with metadata '%s': %w", version, meta, err)
	}
	return nv.String(), nil
}

// replaceFile sets the data of name in files, adding it when absent.
func replaceFile(files []file, name string, data []byte) []file {
	for i := range files {
		if files[i].name == name {
			files[i].data = data
			return files
		}
	}
	files = append(files, file{name: name, data: data})
	sortFiles(files)
	return files
}

// setChartVersion rewrites Chart.yaml with a new version.
func setChartVersion(files []file, md *chart.Metadata, version string) ([]file, error) {
	m := *md
	m.Version = version
	data, err := yaml.Marshal(&m)
	if err != nil {
		return nil, fmt.Errorf("serialise Chart.yaml: %w", err)
	}
	return replaceFile(files, "Chart.yaml", data), nil
}

// writeArchive packages files as <chartName>/<file> in a gzipped tar with
// fixed headers: sorted names, mode 0644, one modification time, no owner,
// an empty gzip header. The same files give the same bytes.
func writeArchive(chartName string, files []file) ([]byte, error) {
	sorted := append([]file(nil), files...)
	sortFiles(sorted)
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(gz)
	for _, f := range sorted {
		name := path.Join(chartName, f.name)
		if !strings.HasPrefix(name, chartName+"/") {
			return nil, fmt.Errorf("chart '%s': file '%s' is outside the chart", chartName, f.name)
		}
		hdr := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     name,
			Mode:     0o644,
			Size:     int64(len(f.data)),
			ModTime:  packageTime,
			Format:   tar.FormatPAX,
		}
		if len(name) < 100 {
			hdr.Format = tar.FormatUSTAR
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("chart '%s': write %s: %w", chartName, name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("chart '%s': write %s: %w", chartName, name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
