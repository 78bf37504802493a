package chart

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"time"
)

// The cache keeps a parsed index in a line format that a new provider
// process reads several times faster than JSON:
//
//	stevedore-index 1
//	c<TAB><chart name>
//	e<TAB><version><TAB><appVersion><TAB><created><TAB><digest>[<TAB><url>]...
//
// An index with a tab or a newline in any of those values (none that Helm
// writes has one) is stored as JSON instead; decodeIndex reads both.
//
// Why a format of its own: every plan in a new provider process reads the
// cached index of each repository once. Compare the two decoders on a
// generated 20 MB index:
//
//	go test -run '^$' -bench BenchmarkDecodeIndex -benchmem ./internal/engine/chart/
//
// and, for a real plan, a CPU profile (STEVEDORE_CPU_PROFILE_DIR) of
// `tofu plan` of 30 artifacts of such a repository with a warm cache, where
// decodeIndex is the share to look at. Delete this file, and store the index
// as JSON, when the JSON decoder reads it about as fast.
const compactHeader = "stevedore-index 1\n"

func encodeIndex(idx *Index) ([]byte, error) {
	names := make([]string, 0, len(idx.Entries))
	size := len(compactHeader)
	for name, list := range idx.Entries {
		names = append(names, name)
		size += len(name) + 3 + len(list)*160
	}
	sort.Strings(names)
	var b bytes.Buffer
	b.Grow(size)
	b.WriteString(compactHeader)
	for _, name := range names {
		if !tsvSafe(name) {
			return json.Marshal(idx)
		}
		b.WriteString("c\t")
		b.WriteString(name)
		b.WriteByte('\n')
		for _, e := range idx.Entries[name] {
			created := ""
			if !e.Created.IsZero() {
				created = e.Created.Format(time.RFC3339Nano)
			}
			fields := append([]string{e.Version, e.AppVersion, created, e.Digest}, e.URLs...)
			b.WriteString("e")
			for _, f := range fields {
				if !tsvSafe(f) {
					return json.Marshal(idx)
				}
				b.WriteByte('\t')
				b.WriteString(f)
			}
			b.WriteByte('\n')
		}
	}
	return b.Bytes(), nil
}

func tsvSafe(s string) bool { return !strings.ContainsAny(s, "\t\n\r") }

var errCompact = errors.New("cached index: malformed")

func decodeIndex(data []byte) (*Index, error) {
	if !bytes.HasPrefix(data, []byte(compactHeader)) {
		idx := &Index{}
		if err := json.Unmarshal(data, idx); err != nil {
			return nil, err
		}
		return idx, nil
	}
	data = data[len(compactHeader):]
	idx := &Index{Entries: map[string][]Entry{}}
	var current string
	have := false
	for len(data) > 0 {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			return nil, errCompact
		}
		line := string(data[:nl])
		data = data[nl+1:]
		switch {
		case strings.HasPrefix(line, "c\t"):
			current, have = line[2:], true
			if _, dup := idx.Entries[current]; dup {
				return nil, errCompact
			}
			idx.Entries[current] = []Entry{}
		case strings.HasPrefix(line, "e\t") && have:
			f := strings.Split(line[2:], "\t")
			if len(f) < 4 {
				return nil, errCompact
			}
			e := Entry{Version: f[0], AppVersion: f[1], Digest: f[3]}
			if f[2] != "" {
				t, err := time.Parse(time.RFC3339Nano, f[2])
				if err != nil {
					return nil, errCompact
				}
				e.Created = t
			}
			if len(f) > 4 {
				e.URLs = f[4:]
			}
			idx.Entries[current] = append(idx.Entries[current], e)
		default:
			return nil, errCompact
		}
	}
	return idx, nil
}
