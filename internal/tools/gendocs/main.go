package main

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/rocectl/rocectl/cli"
	"github.com/rocectl/rocectl/cli/agentcmd"
)

func main() {
	out := flag.String("out", "", "output directory (man8/ and completions/ are created in it)")
	version := flag.String("version", cli.Version, "version printed in the man pages' footer")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "gendocs: -out is required")
		os.Exit(2)
	}
	if err := run(*out, *version); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

func run(out, version string) error {
	date := time.Now().UTC()
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH=%q: %w", s, err)
		}
		date = time.Unix(sec, 0).UTC()
	}
	root := cli.NewRootCommand(cli.NewEnv(io.Discard, io.Discard))
	root.DisableAutoGenTag = true // no "Auto generated ... on DATE" line

	manDir := filepath.Join(out, "man8")
	if err := os.MkdirAll(manDir, 0o755); err != nil {
		return err
	}
	hdr := doc.GenManHeader{Section: "8", Date: &date, Source: "rocectl " + version, Manual: "rocectl manual"}
	if err := genMan(root, manDir, hdr); err != nil {
		return err
	}
	// The daemon's own page, rocectl-agent.8, written last: it replaces
	// the page of `rocectl agent`, which runs the daemon with the same
	// arguments, so rocectl(8)'s SEE ALSO leads to the daemon's flags.
	daemon := agentcmd.NewRootCommand(cli.NewEnv(io.Discard, io.Discard))
	daemon.DisableAutoGenTag = true
	if err := genMan(daemon, manDir, hdr); err != nil {
		return err
	}

	compDir := filepath.Join(out, "completions")
	if err := os.MkdirAll(compDir, 0o755); err != nil {
		return err
	}
	// One set per program: the daemon's flags (--mode audit|enforce,
	// -p *.toml) complete when it is run by hand too.
	for _, cmd := range []*cobra.Command{root, daemon} {
		if err := genCompletions(cmd, compDir); err != nil {
			return err
		}
	}
	return nil
}

// genCompletions writes NAME.bash, _NAME and NAME.fish for the program
// cmd, each asking the program itself (its hidden __complete command).
func genCompletions(cmd *cobra.Command, dir string) error {
	name := cmd.Name()
	for file, gen := range map[string]func(io.Writer) error{
		name + ".bash": func(w io.Writer) error { return cmd.GenBashCompletionV2(w, true) },
		"_" + name:     cmd.GenZshCompletion,
		name + ".fish": func(w io.Writer) error { return cmd.GenFishCompletion(w, true) },
	} {
		var buf bytes.Buffer
		if err := gen(&buf); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// genMan writes one gzipped page per available command, as Debian wants
// them: maximum compression, no name or time in the gzip header.
func genMan(cmd *cobra.Command, dir string, hdr doc.GenManHeader) error {
	for _, c := range cmd.Commands() {
		if !c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand() {
			continue
		}
		if err := genMan(c, dir, hdr); err != nil {
			return err
		}
	}
	h := hdr // GenMan fills in the title of each page
	var page bytes.Buffer
	if err := doc.GenMan(cmd, &h, &page); err != nil {
		return fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := zw.Write(page.Bytes()); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	// "rocectl audit" -> rocectl-audit.8.gz, the name cobra's SEE ALSO uses.
	name := strings.ReplaceAll(cmd.CommandPath(), " ", "-")
	return os.WriteFile(filepath.Join(dir, name+".8.gz"), gz.Bytes(), 0o644)
}
