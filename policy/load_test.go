package policy

import (
	"path/filepath"
	"testing"
)

// Every profile shipped in profiles/ must validate; CI runs this.
func TestShippedProfilesValidate(t *testing.T) {
	files, err := filepath.Glob("../profiles/*.toml")
	if err != nil || len(files) < 5 {
		t.Fatalf("expected the shipped profiles, got %v %v", files, err)
	}
	for _, f := range files {
		p, err := Load(f, LoadOptions{})
		if err != nil {
			t.Errorf("%s:\n%v", f, err)
			continue
		}
		for _, w := range p.Warnings {
			t.Errorf("%s: shipped profiles should not warn: %s", f, w)
		}
	}
}
