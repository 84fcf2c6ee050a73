package dump

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// counterLine, promptMatch and bareCommand's first word are the hand-made
// fast paths of the regular expressions and field split they replaced on
// every line of a dump: each must answer exactly as the original did.
// The seeds are every line of the corpus of real dumps.

var counterOracle = regexp.MustCompile(counterGrammar)

func corpusLines(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "corpus", "*.txt"))
	if len(files) == 0 {
		f.Fatal("no corpus")
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			f.Add(l)
		}
	}
	for _, s := range []string{"[0]: 5", "[0]: rx_ucast_packets: 19121609", "[12]: x: 1", "[]: x: 1", "[0]:  x: 1",
		"\t rx: 01", "rx:1", "rx: ", "a b: 1", "$ ethtool -S eth0", "user@host:~# ethtool -a eth0", "@", "+ x", "ethtool\u00a0-S eth0"} {
		f.Add(s)
	}
}

func FuzzCounterLine(f *testing.F) {
	corpusLines(f)
	f.Fuzz(func(t *testing.T, s string) {
		name, value, ok := counterLine(s)
		m := counterOracle.FindStringSubmatch(s)
		if ok != (m != nil) || ok && (name != m[1] || value != m[2]) {
			t.Fatalf("%q: counterLine %q %q %v, the grammar %q", s, name, value, ok, m)
		}
	})
}

func FuzzPromptMatch(f *testing.F) {
	corpusLines(f)
	f.Fuzz(func(t *testing.T, s string) {
		s = strings.TrimSpace(s)
		got, want := promptMatch(s), promptRE().FindStringSubmatch(s)
		if (got == nil) != (want == nil) || got != nil && got[1] != want[1] {
			t.Fatalf("%q: promptMatch %q, promptRE %q", s, got, want)
		}
	})
}

func FuzzBareCommand(f *testing.F) {
	corpusLines(f)
	f.Fuzz(func(t *testing.T, s string) {
		k, nd, ok := bareCommand(s)
		// As it was: the line's fields, split whole.
		var wk Kind
		var wnd string
		var wok bool
		if fs := strings.Fields(s); len(fs) > 0 && !indented(s) && bareCommands[fs[0]] {
			wk, wnd, wok = commandNetdev(s)
		}
		if k != wk || nd != wnd || ok != wok {
			t.Fatalf("%q: %q %q %v, want %q %q %v", s, k, nd, ok, wk, wnd, wok)
		}
	})
}
