package cli

import (
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/verify"
)

func buildInfo(mainVersion string, settings ...string) *debug.BuildInfo {
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/rocectl/rocectl", Version: mainVersion}}
	for i := 0; i+1 < len(settings); i += 2 {
		bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
	}
	return bi
}

func TestVersionInfoSources(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	stamped := buildInfo("(devel)",
		"-tags", "lab,verbs", "CGO_ENABLED", "1",
		"vcs.revision", rev, "vcs.time", "2026-01-02T03:04:05Z", "vcs.modified", "true")
	for _, c := range []struct {
		name               string
		version, rev, date string
		bi                 *debug.BuildInfo
		want               versionInfo
	}{{
		name:    "plain go build from a checkout: the VCS stamp",
		version: "dev", bi: stamped,
		want: versionInfo{Version: "dev", Revision: rev, Modified: true, CommitTime: "2026-01-02T03:04:05Z", Verbs: true},
	}, {
		name:    "make build: link-time values win over the module version",
		version: "v1.2.0-3-g0123456", rev: rev, date: "2026-02-03T00:00:00Z", bi: buildInfo("v1.1.0", "CGO_ENABLED", "0"),
		want: versionInfo{Version: "v1.2.0-3-g0123456", Revision: rev, BuildDate: "2026-02-03T00:00:00Z"},
	}, {
		name:    "go install module@version: the module version",
		version: "dev", bi: buildInfo("v1.1.0", "-tags", "verbs", "CGO_ENABLED", "0"),
		// -tags verbs without cgo builds the stub: no verbs support.
		want: versionInfo{Version: "v1.1.0"},
	}, {
		name:    "a nested worktree stamped with the enclosing checkout's commit",
		version: "v1.2.0", rev: "fedcba", bi: stamped,
		want: versionInfo{Version: "v1.2.0", Revision: "fedcba", Verbs: true},
	}, {
		name:    "no build info",
		version: "dev",
		want:    versionInfo{Version: "dev"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			got := newVersionInfo(c.version, c.rev, c.date, c.bi)
			got.SchemaVersion, got.GoVersion, got.Platform = 0, "", ""
			if got != c.want {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestVersionShortLine(t *testing.T) {
	v := versionInfo{Version: "v1.2.0", Revision: "0123456789abcdef0123", Modified: true, BuildDate: "2026-02-03T00:00:00Z"}
	if got, want := v.short(), "v1.2.0 (revision 0123456789ab-modified, built 2026-02-03T00:00:00Z, verbs support: no)"; got != want {
		t.Errorf("short() = %q, want %q", got, want)
	}
}

func TestVersionCommandAndFlag(t *testing.T) {
	code, out, errs := run(t, nil, "version", "-o", "json")
	if code != ExitOK {
		t.Fatalf("version -o json: exit %d\n%s", code, errs)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("version -o json: %v\n%s", err, out)
	}
	for _, k := range []string{"schema_version", "version", "go_version", "platform", "verbs"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("version -o json lacks %q:\n%s", k, out)
		}
	}
	code, out, _ = run(t, nil, "version")
	if code != ExitOK || !strings.Contains(out, "verbs support: ") {
		t.Errorf("version: exit %d\n%s", code, out)
	}
	code, out, _ = run(t, nil, "--version")
	if code != ExitOK || !strings.HasPrefix(out, "rocectl ") || !strings.Contains(out, "verbs support: ") {
		t.Errorf("--version: exit %d\n%s", code, out)
	}
	if code, _, _ = run(t, nil, "version", "-o", "yaml"); code != ExitError {
		t.Errorf("version -o yaml: exit %d, want %d", code, ExitError)
	}
}

// An operator who ran `make build` gets a static binary without verbs; the
// error says which build has them.
func TestVerbsErrorNamesTheVerbsBuild(t *testing.T) {
	err := fmt.Errorf("verbs loopback on mlx5_0 port 1: %w", verify.ErrVerbsNotBuiltIn)
	got := verbsErrorText(err)
	if !strings.HasPrefix(got, err.Error()) || !strings.Contains(got, "make build-verbs") || !strings.Contains(got, "Debian package") {
		t.Errorf("verbsErrorText = %q", got)
	}
	other := fmt.Errorf("no RoCE v2 IPv4 GID")
	if got := verbsErrorText(other); got != other.Error() {
		t.Errorf("verbsErrorText(other) = %q, want it unchanged", got)
	}
}
