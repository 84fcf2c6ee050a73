package ttar

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
)

// Kind says what an archive entry is.
type Kind int

// Entry kinds.
const (
	Dir Kind = iota
	File
	Symlink
)

func (k Kind) String() string {
	switch k {
	case Dir:
		return "directory"
	case File:
		return "file"
	case Symlink:
		return "symlink"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Entry is one directory, file or symlink of an archive.
type Entry struct {
	Kind   Kind
	Path   string      // slash-separated, relative, as stored in the archive
	Mode   fs.FileMode // permission bits; 0 for symlinks
	Data   []byte      // file content (File only)
	Target string      // link target as stored, usually relative (Symlink only)
}

// SyntaxError reports a malformed archive with the line it was found on.
type SyntaxError struct {
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("ttar: line %d: %s", e.Line, e.Msg) }

// maxLine bounds one archive line; sysfs binary attributes (PCI config
// space) are a few KiB, so this is generous.
const maxLine = 1 << 20

// Parse reads a whole archive. Entries come back in archive order.
func Parse(r io.Reader) ([]Entry, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLine)
	// Split on '\n' only, keeping everything else (including '\r') as data,
	// exactly like bash `read -r`.
	sc.Split(scanLF)

	var (
		entries []Entry
		cur     *Entry // entry waiting for its Mode line
		lineNo  int
	)
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		lineNo++
		return sc.Text(), true
	}
	for {
		line, ok := next()
		if !ok {
			break
		}
		switch {
		case strings.HasPrefix(line, "#") || line == "":
			continue
		case strings.HasPrefix(line, "Directory: "):
			if err := pending(cur, lineNo); err != nil {
				return nil, err
			}
			p, err := cleanPath(strings.TrimPrefix(line, "Directory: "), lineNo)
			if err != nil {
				return nil, err
			}
			entries = append(entries, Entry{Kind: Dir, Path: p})
			cur = &entries[len(entries)-1]
		case strings.HasPrefix(line, "Path: "):
			if err := pending(cur, lineNo); err != nil {
				return nil, err
			}
			p, err := cleanPath(strings.TrimPrefix(line, "Path: "), lineNo)
			if err != nil {
				return nil, err
			}
			kw, ok := next()
			if !ok {
				return nil, &SyntaxError{lineNo, "archive ends after Path"}
			}
			switch {
			case strings.HasPrefix(kw, "SymlinkTo: "):
				target := strings.TrimPrefix(kw, "SymlinkTo: ")
				if target == "" {
					return nil, &SyntaxError{lineNo, "empty SymlinkTo"}
				}
				entries = append(entries, Entry{Kind: Symlink, Path: p, Target: target})
				cur = nil
			case strings.HasPrefix(kw, "Lines: "):
				n, err := strconv.Atoi(strings.TrimPrefix(kw, "Lines: "))
				if err != nil || n < 0 {
					return nil, &SyntaxError{lineNo, fmt.Sprintf("bad line count %q", kw)}
				}
				var data bytes.Buffer
				for i := 0; i < n; i++ {
					l, ok := next()
					if !ok {
						return nil, &SyntaxError{lineNo, fmt.Sprintf("%s: archive ends after %d of %d lines", p, i, n)}
					}
					content, newline := unescape(l)
					data.Write(content)
					if newline {
						data.WriteByte('\n')
					}
				}
				entries = append(entries, Entry{Kind: File, Path: p, Data: data.Bytes()})
				cur = &entries[len(entries)-1]
			default:
				return nil, &SyntaxError{lineNo, fmt.Sprintf("%s: want Lines or SymlinkTo, got %q", p, kw)}
			}
		case strings.HasPrefix(line, "Mode: "):
			if cur == nil {
				return nil, &SyntaxError{lineNo, "Mode without a directory or file"}
			}
			m, err := strconv.ParseUint(strings.TrimPrefix(line, "Mode: "), 8, 32)
			if err != nil || m > 0o7777 {
				return nil, &SyntaxError{lineNo, fmt.Sprintf("bad mode %q", line)}
			}
			cur.Mode = fs.FileMode(m).Perm()
			cur = nil
		default:
			return nil, &SyntaxError{lineNo, fmt.Sprintf("unknown keyword %q", truncate(line))}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("ttar: line %d: %w", lineNo+1, err)
	}
	if err := pending(cur, lineNo); err != nil {
		return nil, err
	}
	return entries, nil
}

// pending rejects an entry that never got its Mode line.
func pending(cur *Entry, line int) error {
	if cur != nil {
		return &SyntaxError{line, fmt.Sprintf("%s %s has no Mode", cur.Kind, cur.Path)}
	}
	return nil
}

// cleanPath keeps archive paths inside the extraction directory: the ttar
// script itself is "not designed for untrusted input", this reader is.
func cleanPath(p string, line int) (string, error) {
	p = strings.TrimSuffix(p, "/")
	c := path.Clean(p)
	if p == "" || path.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") {
		return "", &SyntaxError{line, fmt.Sprintf("path %q leaves the archive root", p)}
	}
	return c, nil
}

// unescape undoes the ttar content escaping of one line and reports whether
// the line ended with a newline in the original file (no unescaped EOF).
func unescape(l string) ([]byte, bool) {
	out := make([]byte, 0, len(l))
	newline := true
	for i := 0; i < len(l); {
		switch {
		case strings.HasPrefix(l[i:], `\NULLBYTE`):
			out = append(out, "NULLBYTE"...)
			i += len(`\NULLBYTE`)
		case strings.HasPrefix(l[i:], `\EOF`):
			out = append(out, "EOF"...)
			i += len(`\EOF`)
		case strings.HasPrefix(l[i:], "NULLBYTE"):
			out = append(out, 0)
			i += len("NULLBYTE")
		case strings.HasPrefix(l[i:], "EOF"):
			newline = false
			i += len("EOF")
		default:
			out = append(out, l[i])
			i++
		}
	}
	return out, newline
}

func scanLF(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

func truncate(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// Extract recreates the archive read from r under dir, which must exist.
// Every path is confined to dir (os.Root), so an archive cannot write
// outside it even through its own symlinks. Later entries replace earlier
// ones at the same path, as the ttar script does.
func Extract(r io.Reader, dir string) error {
	entries, err := Parse(r)
	if err != nil {
		return err
	}
	return WriteEntries(entries, dir)
}

// ExtractFile extracts the archive file at archive into dir.
func ExtractFile(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := Extract(f, dir); err != nil {
		return fmt.Errorf("%s: %w", archive, err)
	}
	return nil
}

// WriteEntries materialises parsed entries under dir.
func WriteEntries(entries []Entry, dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	// Directories get their mode last: an archived 0555 directory must not
	// stop the files inside it from being written.
	var dirModes []Entry
	for _, e := range entries {
		name := e.Path
		if parent := path.Dir(name); parent != "." {
			if err := root.MkdirAll(parent, 0o755); err != nil {
				return fmt.Errorf("ttar: %s: %w", name, err)
			}
		}
		switch e.Kind {
		case Dir:
			if err := root.MkdirAll(name, 0o755); err != nil {
				return fmt.Errorf("ttar: %s: %w", name, err)
			}
			dirModes = append(dirModes, e)
		case File:
			if err := replace(root, name); err != nil {
				return err
			}
			if err := root.WriteFile(name, e.Data, 0o600); err != nil {
				return fmt.Errorf("ttar: %s: %w", name, err)
			}
			if err := root.Chmod(name, e.Mode); err != nil {
				return fmt.Errorf("ttar: %s: %w", name, err)
			}
		case Symlink:
			if err := replace(root, name); err != nil {
				return err
			}
			if err := root.Symlink(e.Target, name); err != nil {
				return fmt.Errorf("ttar: %s: %w", name, err)
			}
		}
	}
	for i := len(dirModes) - 1; i >= 0; i-- {
		if err := root.Chmod(dirModes[i].Path, dirModes[i].Mode); err != nil {
			return fmt.Errorf("ttar: %s: %w", dirModes[i].Path, err)
		}
	}
	return nil
}

// replace removes whatever is at name (file, link or directory tree) so a
// later archive entry wins, matching `ttar -x --recursive-unlink`.
func replace(root *os.Root, name string) error {
	if _, err := root.Lstat(name); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("ttar: %s: %w", name, err)
	}
	if err := root.RemoveAll(name); err != nil {
		return fmt.Errorf("ttar: %s: %w", name, err)
	}
	return nil
}
