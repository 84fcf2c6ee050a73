package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// MaxProfileSize bounds a profile file. Real profiles are a few KiB; a huge
// file is a mistake (or an attack) and is refused before it is parsed.
const MaxProfileSize = 1 << 20

// LoadOptions tune Load.
type LoadOptions struct {
	// AllowInsecure accepts profile files that are group- or
	// world-writable, or owned by a user other than root and the one
	// rocectl runs as. A profile configures the host as root, so by
	// default such files are refused (--allow-insecure-profile).
	AllowInsecure bool
}

// Load reads, merges (include), decodes and validates one profile. On any
// error it returns a *ProfileError holding every diagnostic, and no Profile:
// nothing may be changed on a host from a profile with errors.
func Load(path string, opts LoadOptions) (*Profile, error) {
	l := &loader{opts: opts, hash: sha256.New()}
	root := l.file(path, nil, nil)
	if root == nil {
		return nil, l.fail()
	}
	d := &decoder{pos: map[string]Pos{}}
	p := &Profile{Verify: defaultVerify, Guard: defaultGuard, Files: l.files}
	d.decodeProfile(&node{kind: kTable, tbl: root, src: l.first}, p)
	// The profile is the file named on the command line: an overlay that
	// does not name itself is called after its file, not after its base.
	if p.Name == "" || !l.topNamed {
		p.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	p.pos = d.pos
	for _, dg := range d.diags.Errors() {
		p.failed = append(p.failed, dg.Key)
	}
	p.Hash = hex.EncodeToString(l.hash.Sum(nil))[:16]
	if l.incomplete {
		// The loader has said what is wrong with the include lines.
		for _, dg := range d.diags {
			if dg.Key != "include" && !strings.HasPrefix(dg.Key, "include[") {
				l.diags = append(l.diags, dg)
			}
		}
		return nil, l.fail()
	}
	l.diags = append(l.diags, d.diags...)
	if !setsAnything(root) {
		l.diags = append(l.diags, Diagnostic{Pos: Pos{File: path}, Msg: "the profile sets nothing",
			Allowed: "at least one of [link], [qos], [buffers], [ecn], [roce], [devlink], [firmware], [nccl], [classes]"})
	}
	// Cross-field rules only look at values that decoded cleanly, so they
	// run even when other keys had errors: every problem is shown at once.
	l.diags = append(l.diags, checkRules(p, root)...)
	if len(l.diags.Errors()) > 0 {
		return nil, l.fail()
	}
	l.diags.sort()
	p.Warnings = l.diags.Warnings()
	deriveClasses(p)
	return p, nil
}

func setsAnything(root *table) bool {
	for _, k := range []string{"link", "qos", "buffers", "ecn", "roce", "devlink", "firmware", "nccl", "classes"} {
		if n := root.get(k); n != nil && (n.kind != kTable || len(n.tbl.keys) > 0) {
			return true
		}
	}
	return false
}

type loader struct {
	hash     hash.Hash // over every file as read, in load order
	opts     LoadOptions
	topNamed bool // the top-level file sets name itself
	// incomplete: an include failed to load; what loaded is decoded for
	// its own errors, and the whole-profile checks are left out.
	incomplete bool
	diags      Diagnostics
	files      []string
	first      *source
}

func (l *loader) fail() error {
	l.diags.sort()
	return &ProfileError{Diags: l.diags}
}

func (l *loader) fileErr(at *node, file, msg, allowed string) {
	if at != nil {
		l.diags = append(l.diags, Diagnostic{Pos: at.valPos, Key: "include", Msg: msg, Allowed: allowed, Source: at.src.line(at.valPos.Line)})
		return
	}
	l.diags = append(l.diags, Diagnostic{Pos: Pos{File: file}, Msg: msg, Allowed: allowed})
}

// file loads one file and, recursively, what it includes. stack holds the
// absolute paths being loaded, to detect cycles; at is the include entry
// that named this file (nil for the top-level profile).
func (l *loader) file(path string, stack []string, at *node) *table {
	abs, err := filepath.Abs(path)
	if err != nil {
		l.fileErr(at, path, err.Error(), "")
		return nil
	}
	for i, s := range stack {
		if s == abs {
			chain := append(append([]string{}, stack[i:]...), abs)
			for j := range chain {
				chain[j] = filepath.Base(chain[j])
			}
			l.fileErr(at, path, "include cycle: "+strings.Join(chain, " -> "), "each file included once along a chain")
			return nil
		}
	}
	data, err := l.read(path)
	if err != nil {
		msg := err.Error()
		switch {
		case errors.Is(err, os.ErrNotExist) && at != nil:
			msg = fmt.Sprintf("%s: no such file", path) // the include line names another file
		case errors.Is(err, os.ErrNotExist):
			msg = "no such file"
		}
		l.fileErr(at, path, msg, "")
		return nil
	}
	fmt.Fprintf(l.hash, "%s\x00%d\x00", path, len(data))
	l.hash.Write(data)
	if ok, line, col := isText(data); !ok {
		l.diags = append(l.diags, Diagnostic{Pos: Pos{path, line, col}, Msg: "not a text file: invalid UTF-8 or a NUL byte", Allowed: "a UTF-8 TOML document"})
		return nil
	}
	if strings.TrimSpace(string(data)) == "" {
		l.fileErr(at, path, "the file is empty", "a TOML document that sets at least one section")
		return nil
	}
	tree, src, diag := parseTree(path, data)
	if l.first == nil {
		l.first = src
	}
	l.files = append(l.files, path)
	if diag != nil {
		l.diags = append(l.diags, *diag)
		return nil
	}
	if len(stack) == 0 {
		l.topNamed = tree.get("name") != nil
	}
	inc := tree.get("include")
	if inc == nil {
		return tree
	}
	if inc.kind != kArray {
		l.diags = append(l.diags, Diagnostic{Pos: inc.valPos, Key: "include", Msg: "expected an array of file names, got " + describe(inc), Allowed: `["base.toml", ...]`, Source: src.line(inc.valPos.Line)})
		return nil
	}
	base := newTable()
	ok := true
	for i, el := range inc.arr {
		if el.kind != kString || el.str == "" {
			l.diags = append(l.diags, Diagnostic{Pos: el.valPos, Key: fmt.Sprintf("include[%d]", i), Msg: "expected a file name, got " + describe(el), Source: src.line(el.valPos.Line)})
			ok = false
			continue
		}
		p := el.str
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(path), p)
		}
		sub := l.file(p, append(stack, abs), el)
		if sub == nil {
			ok = false
			continue
		}
		merge(base, sub)
	}
	if !ok {
		// Still decoded, for the errors of the files that did load
		// (every problem at once); the rules that need the whole
		// profile are skipped (incomplete).
		l.incomplete = true
	}
	merge(base, tree)
	return base
}

// read returns the file's bytes after checking that it is a regular file,
// owned by root or the user rocectl runs as and not writable by others
// (unless allowed), and not too large.
func (l *loader) read(path string) ([]byte, error) {
	// O_NONBLOCK: a FIFO named as a profile must not hang the loader; the
	// regular-file check below then refuses it.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if st.Mode().Perm()&0o022 != 0 && !l.opts.AllowInsecure {
		return nil, fmt.Errorf("%s is writable by group or others (mode %04o); a profile configures the host as root, so rocectl refuses it (fix with chmod go-w, or pass --allow-insecure-profile)", path, st.Mode().Perm())
	}
	// Its owner can change it at will: only root, or the user rocectl runs
	// as, may own what rocectl acts on (as sshd's StrictModes for
	// authorized_keys). Root therefore reads only root's profiles.
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && !l.opts.AllowInsecure {
		if euid := uint32(os.Geteuid()); sys.Uid != 0 && sys.Uid != euid {
			return nil, fmt.Errorf("%s is owned by uid %d; a profile configures the host as root, so rocectl reads only profiles owned by root or by the user it runs as, uid %d (fix with chown %d, or pass --allow-insecure-profile)", path, sys.Uid, euid, euid)
		}
	}
	if st.Size() > MaxProfileSize {
		return nil, fmt.Errorf("%s is %d bytes; profiles are limited to %d bytes", path, st.Size(), MaxProfileSize)
	}
	return io.ReadAll(io.LimitReader(f, MaxProfileSize+1))
}
