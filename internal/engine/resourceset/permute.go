package resourceset

import (
	"hash/adler32"
	"strconv"
	"strings"
	"unicode"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
)

// MaxPermutations is the most input sets the Permute strategy may make, as
// flux-operator bounds it: a set whose product of sources is larger fails
// its plan on `input_strategy.name`.
const MaxPermutations = 10000

// inputSource is one source of inputs of the Permute strategy: the set itself
// (its literal inputs) or one ResourceSetInputProvider, each input already
// carrying its `provider` key.
type inputSource struct {
	name   string
	inputs []map[string]any
}

// sources are the sources of the set's inputs in flux-operator's order: the
// set first, then its providers as ResolveInputs sorted them (by name: they
// share kind and namespace).
func (s *Spec) sources() []inputSource {
	out := make([]inputSource, 0, len(s.exported)+1)
	out = append(out, inputSource{name: s.Name, inputs: s.literalInputs()})
	return append(out, s.exported...)
}

// permutedInputs are the inputs of the Permute strategy: the cartesian
// product of the sources, the first source varying slowest. Each input set
// holds, under the normalized name of each source (PermuteKey), the input it
// took from it, and an `id`: the Adler-32 checksum, in decimal, of
// `<key>=<index>` of each source joined by `/`, as flux-operator computes it.
// A source without inputs is skipped, unless includeEmpty: then the product
// is empty.
func permutedInputs(sources []inputSource, includeEmpty bool) ([]map[string]any, error) {
	type scoped struct {
		key    string
		inputs []map[string]any
	}
	var used []scoped
	total := 0
	for _, src := range sources {
		if len(src.inputs) == 0 && !includeEmpty {
			continue
		}
		if len(used) == 0 {
			total = len(src.inputs)
		} else {
			total *= len(src.inputs)
		}
		if total > MaxPermutations {
			return nil, fielderr.Errorf("input_strategy.name", "Permute: with the %d inputs of %s the inputs would make %d permutations, more than the %d flux-operator allows: "+
				"export fewer inputs (a provider's filters), or use Flatten", len(src.inputs), src.name, total, MaxPermutations)
		}
		key := PermuteKey(src.name)
		if key == "" {
			return nil, fielderr.Errorf("input_strategy.name", "Permute: the name %q normalizes to an empty key", src.name)
		}
		used = append(used, scoped{key: key, inputs: src.inputs})
	}
	if len(used) == 0 || total == 0 {
		return nil, nil
	}
	out := make([]map[string]any, 0, total)
	pick := make([]int, len(used))
	for {
		in := make(map[string]any, len(used)+1)
		parts := make([]string, len(used))
		for i, src := range used {
			in[src.key] = src.inputs[pick[i]]
			parts[i] = src.key + "=" + strconv.Itoa(pick[i])
		}
		in["id"] = strconv.FormatUint(uint64(adler32.Checksum([]byte(strings.Join(parts, "/")))), 10)
		out = append(out, in)
		// The next pick, as an odometer whose last wheel turns fastest.
		i := len(pick) - 1
		for ; i >= 0; i-- {
			if pick[i]++; pick[i] < len(used[i].inputs) {
				break
			}
			pick[i] = 0
		}
		if i < 0 {
			return out, nil
		}
	}
}

// PermuteKey is the key under which the Permute strategy puts the inputs of
// the object named name, as flux-operator normalizes it for templates:
// lower case, spaces and punctuation become `_`, other characters outside
// [a-z0-9] are dropped, and runs of `_` (and those at either end) collapse.
func PermuteKey(name string) string {
	mapped := strings.Map(func(r rune) rune {
		r = unicode.ToLower(r)
		switch {
		case unicode.IsSpace(r) || unicode.IsPunct(r):
			return '_'
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			return r
		}
		return -1
	}, name)
	var words []string
	for _, w := range strings.Split(mapped, "_") {
		if w != "" {
			words = append(words, w)
		}
	}
	return strings.Join(words, "_")
}

// checkStrategy reports a strategy the engine does not know, on
// `input_strategy`.
func checkStrategy(name string, includeEmpty bool) error {
	switch name {
	case "", InputStrategyFlatten:
		if includeEmpty {
			return fielderr.Errorf("input_strategy.include_empty_providers", `applies only to name "Permute", as in flux-operator`)
		}
	case InputStrategyPermute:
	default:
		return fielderr.Errorf("input_strategy.name", `must be %q or %q, got %q`, InputStrategyFlatten, InputStrategyPermute, name)
	}
	return nil
}
