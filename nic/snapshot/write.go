package snapshot

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/rocectl/rocectl/nic"
)

// maxHops bounds symlink resolution, as the kernel's ELOOP limit does.
const maxHops = 40

// Write creates a snapshot in dir, which must be empty or not exist yet:
// snapshot.json from meta, kernel.json from st, and under dir/sys a copy of
// each host path in paths (a file, or a directory copied recursively) read
// through src.
//
// Every symlink met while resolving a path is reproduced with its target as
// on the host (absolute targets are rewritten relative), so a path through
// /sys/class/net/x produces both the class/net/x link and the directory it
// points to. Symlinks inside a copied directory are copied as links and not
// followed. Files that fail to read are skipped and listed in
// Meta.Unreadable as "PATH: ERRNO" (sysfs GID attributes of empty entries
// read EINVAL); write-only attributes (no read permission bits) and paths
// that do not exist on the host are skipped silently, since capture asks
// for optional features whether or not the host has them. Output files are
// 0644 and directories 0755; JSON is indented with sorted map keys, so the
// same input gives the same bytes. Files are created (O_EXCL), never
// written through whatever is at their name (createFile).
func Write(dir string, meta Meta, st *KernelState, src nic.FS, paths []string) error {
	switch meta.Format {
	case "":
		meta.Format = Format
	case Format:
	default:
		return fmt.Errorf("snapshot: cannot write format %q, only %q", meta.Format, Format)
	}
	if _, err := time.Parse(time.RFC3339, meta.CapturedAt); err != nil {
		return fmt.Errorf("snapshot: captured_at: %w", err)
	}
	// Write only reads st: a shallow copy takes the default of an absent
	// Links without touching the caller's state. (A deep copy cost a
	// 256-interface import a copy of every counter map.)
	ks := &KernelState{}
	if st != nil {
		*ks = *st
	}
	if ks.Links == nil {
		ks.Links = map[string]*LinkState{}
	}
	if err := ks.Validate(); err != nil {
		return fmt.Errorf("snapshot: kernel state: %w", err)
	}
	if err := emptyDir(dir); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	defer root.Close()

	w := &writer{src: src, out: root, unreadable: map[string]bool{}, written: map[string]bool{}}
	for _, u := range meta.Unreadable {
		w.unreadable[u] = true
	}
	for _, p := range paths {
		if err := w.copyPath(p); err != nil {
			return fmt.Errorf("snapshot: %s: %w", p, err)
		}
	}
	meta.Unreadable = make([]string, 0, len(w.unreadable))
	for u := range w.unreadable {
		meta.Unreadable = append(meta.Unreadable, u)
	}
	slices.Sort(meta.Unreadable)

	if err := writeJSON(root, MetaFile, meta); err != nil {
		return err
	}
	return writeJSON(root, KernelFile, ks)
}

// emptyDir creates dir or checks that it is empty: output must not mix
// with leftovers of an earlier capture.
func emptyDir(dir string) error {
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return fmt.Errorf("snapshot: %w", err)
	case len(ents) > 0:
		return fmt.Errorf("snapshot: %s is not empty", dir)
	}
	return nil
}

func writeJSON(root *os.Root, name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("snapshot: %s: %w", name, err)
	}
	if err := createFile(root, name, append(b, '\n')); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	return nil
}

// createFile writes a new file of the snapshot, mode 0644. O_EXCL: the
// directory was empty when Write began, so anything already at the name
// was put there since by someone else, and root must not write through
// it (a hard link there would make the write land in the linked file,
// outside the directory that os.Root confines).
func createFile(root *os.Root, name string, data []byte) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

type writer struct {
	src        nic.FS
	out        *os.Root
	unreadable map[string]bool
	written    map[string]bool // the files created so far
}

// local maps a host path (/sys/...) to its name inside the snapshot.
func local(hostPath string) string { return strings.TrimPrefix(hostPath, "/") }

func underSys(p string) bool { return p == "/sys" || strings.HasPrefix(p, "/sys/") }

// copyPath resolves p one component at a time on the host, recording each
// symlink it crosses, then copies what p finally names.
func (w *writer) copyPath(p string) error {
	if !path.IsAbs(p) {
		return fmt.Errorf("not an absolute host path")
	}
	p = path.Clean(p)
	if !underSys(p) {
		return fmt.Errorf("outside /sys")
	}
	for hops := 0; ; hops++ {
		if hops > maxHops {
			return syscall.ELOOP
		}
		resolved, rest, link, err := w.walk(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // optional feature absent on this host
		}
		if err != nil {
			return err
		}
		if link == "" {
			return w.copyTree(resolved)
		}
		target, err := w.link(resolved, link)
		if err != nil {
			return err
		}
		p = path.Join(target, rest)
		if !underSys(p) {
			return fmt.Errorf("symlink %s leads outside /sys to %s", resolved, p)
		}
	}
}

// walk follows p from / until the first symlink. It returns the resolved
// prefix; when that prefix is a symlink it also returns its raw target and
// the remaining components.
func (w *writer) walk(p string) (resolved, rest, link string, err error) {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	cur := "/"
	for i, part := range parts {
		next := path.Join(cur, part)
		fi, err := os.Lstat(w.src.Path(next))
		if err != nil {
			return "", "", "", err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(w.src.Path(next))
			if err != nil {
				return "", "", "", err
			}
			return next, path.Join(parts[i+1:]...), target, nil
		}
		cur = next
	}
	return cur, "", "", nil
}

// link recreates the host symlink at hostPath and returns the host path it
// points to.
func (w *writer) link(hostPath, target string) (string, error) {
	dirOf := path.Dir(hostPath)
	var abs string
	if path.IsAbs(target) {
		abs = path.Clean(target)
		rel, err := filepath.Rel(dirOf, abs)
		if err != nil {
			return "", err
		}
		target = filepath.ToSlash(rel)
	} else {
		abs = path.Join(dirOf, target)
	}
	name := local(hostPath)
	if err := w.out.MkdirAll(path.Dir(name), 0o755); err != nil {
		return "", err
	}
	if old, err := w.out.Readlink(name); err == nil {
		if old == target {
			return abs, nil
		}
		if err := w.out.Remove(name); err != nil {
			return "", err
		}
	}
	if err := w.out.Symlink(target, name); err != nil {
		return "", err
	}
	return abs, nil
}

// copyTree copies a resolved (symlink-free) host path: a file, or a
// directory with everything below it.
func (w *writer) copyTree(hostPath string) error {
	fi, err := os.Lstat(w.src.Path(hostPath))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(w.src.Path(hostPath))
		if err != nil {
			return err
		}
		_, err = w.link(hostPath, target)
		return err
	case fi.IsDir():
		if err := w.out.MkdirAll(local(hostPath), 0o755); err != nil {
			return err
		}
		ents, err := os.ReadDir(w.src.Path(hostPath))
		if err != nil {
			w.skip(hostPath, err)
			return nil
		}
		for _, e := range ents { // os.ReadDir sorts by name
			if err := w.copyTree(path.Join(hostPath, e.Name())); err != nil {
				return err
			}
		}
		return nil
	case fi.Mode().IsRegular():
		if fi.Mode().Perm()&0o444 == 0 {
			return nil // write-only attribute (bind, unbind, ...)
		}
		b, err := os.ReadFile(w.src.Path(hostPath))
		if err != nil {
			w.skip(hostPath, err)
			return nil
		}
		name := local(hostPath)
		if w.written[name] { // copied already, through another of the paths
			return nil
		}
		if err := w.out.MkdirAll(path.Dir(name), 0o755); err != nil {
			return err
		}
		if err := createFile(w.out, name, b); err != nil {
			return err
		}
		w.written[name] = true
		return nil
	}
	return nil // devices, sockets, fifos: nothing a snapshot can hold
}

// skip records an unreadable host path with its errno.
func (w *writer) skip(hostPath string, err error) {
	reason := err.Error()
	var errno syscall.Errno
	if errors.As(err, &errno) {
		reason = ErrnoName(errno)
	}
	w.unreadable[hostPath+": "+reason] = true
}
