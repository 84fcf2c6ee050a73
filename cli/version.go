package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rocectl/rocectl/doc"
)

// Version, Revision and BuildDate are set at build time by the Makefile
// (and so the Debian package):
//
//	-ldflags "-X github.com/rocectl/rocectl/cli.Version=v1.2.0 -X github.com/rocectl/rocectl/cli.Revision=<sha> -X github.com/rocectl/rocectl/cli.BuildDate=2026-01-02T03:04:05Z"
//
// Without them (a plain `go build`), the version comes from the module
// version `go install` records, and the revision and its date from the VCS
// stamp Go writes into builds from a git checkout. Go does not stamp builds
// from a linked git worktree (golang/go#58218), hence Revision.
var (
	Version   = "dev"
	Revision  = ""
	BuildDate = ""
)

// versionInfo is `rocectl version -o json`: doc.Version, with the text
// renderings.
type versionInfo doc.Version

// newVersionInfo merges the link-time variables with the build info; bi
// may be nil (no build info in the binary).
func newVersionInfo(version, revision, buildDate string, bi *debug.BuildInfo) versionInfo {
	v := versionInfo{
		SchemaVersion: SchemaVersion,
		Version:       version,
		Revision:      revision,
		BuildDate:     buildDate,
		GoVersion:     runtime.Version(),
		Platform:      runtime.GOOS + "/" + runtime.GOARCH,
	}
	if bi == nil {
		return v
	}
	if v.Version == "" || v.Version == "dev" {
		// "(devel)" is what Go records for the main module of a checkout.
		if mv := bi.Main.Version; mv != "" && mv != "(devel)" {
			v.Version = mv
		}
	}
	if bi.GoVersion != "" {
		v.GoVersion = bi.GoVersion
	}
	var tags []string
	var vcsRev, vcsTime string
	cgo, vcsModified := false, false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			vcsRev = s.Value
		case "vcs.time":
			vcsTime = s.Value
		case "vcs.modified":
			vcsModified = s.Value == "true"
		case "-tags":
			tags = strings.Split(s.Value, ",")
		case "CGO_ENABLED":
			cgo = s.Value == "1"
		}
	}
	// A worktree nested in another checkout is stamped with that
	// checkout's commit: the link-time revision wins, and a stamp for a
	// different commit says nothing about this build.
	if vcsRev != "" && (v.Revision == "" || v.Revision == vcsRev) {
		v.Revision, v.CommitTime, v.Modified = vcsRev, vcsTime, vcsModified
	}
	// The same condition as verify's verbs_cgo.go build constraint
	// (cgo && verbs), read from what the toolchain recorded.
	v.Verbs = cgo && slices.Contains(tags, "verbs")
	return v
}

func currentVersionInfo() versionInfo {
	bi, _ := debug.ReadBuildInfo()
	return newVersionInfo(Version, Revision, BuildDate, bi)
}

// short is the one line of `rocectl --version`.
func (v versionInfo) short() string {
	var parts []string
	if v.Revision != "" {
		rev := v.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if v.Modified {
			rev += "-modified"
		}
		parts = append(parts, "revision "+rev)
	}
	if v.BuildDate != "" {
		parts = append(parts, "built "+v.BuildDate)
	}
	parts = append(parts, "verbs support: "+yesNo(v.Verbs))
	return v.Version + " (" + strings.Join(parts, ", ") + ")"
}

func (v versionInfo) writeText(w io.Writer) {
	row := func(k, val string) {
		if val != "" {
			fmt.Fprintf(w, "%-14s %s\n", k+":", val)
		}
	}
	row("version", v.Version)
	rev := v.Revision
	if rev != "" && v.Modified {
		rev += " (modified)"
	}
	row("revision", rev)
	row("commit time", v.CommitTime)
	row("build date", v.BuildDate)
	row("go", v.GoVersion+" "+v.Platform)
	verbs := "yes"
	if !v.Verbs {
		verbs = "no (verify --loopback/--peer need it: use " + verbsHint + ")"
	}
	row("verbs support", verbs)
}

// verbsHint says how to get a binary with verbs support.
const verbsHint = "`make build-verbs` (cgo, -tags verbs, libibverbs-dev) or the rocectl Debian package"

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func newVersionCmd(env *Env) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, VCS revision, build date and whether verbs support is built in",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			v := currentVersionInfo()
			if output == "json" {
				return writeJSON(env.Stdout, doc.Version(v))
			}
			v.writeText(env.Stdout)
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}
