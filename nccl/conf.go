package nccl

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/rocectl/rocectl/nic"
)

// NCCL reads its configuration files like this (NVIDIA/nccl@5067397
// src/misc/param.cc setEnvFile, src/os/linux.cc ncclOsSetEnv): fgets into a
// 4096-byte buffer, strip one trailing "\n" then one trailing "\r", skip
// lines starting with '#' and lines without '=', split at the first '=',
// keep at most 1023 bytes of name and of value, and setenv(name, value, 0).
// No whitespace is trimmed and no quotes are removed. setenv never
// overwrites, so the process environment beats every file, and within and
// across files the first definition of a name wins. The files are
// $NCCL_CONF_FILE (or, when that is unset or empty, ~/.nccl.conf) and then
// /etc/nccl.conf.
const (
	ncclLineBuf = 4096 // fgets buffer: at most 4095 bytes per read
	ncclNameMax = 1023
	ncclValMax  = 1023
)

// Markers of the block rocectl owns in an NCCL config file. They start with
// '#', so NCCL skips them.
const (
	ncclBeginMarker = "# BEGIN rocectl managed block"
	ncclEndMarker   = "# END rocectl managed block"
)

// Var is one NAME=value definition.
type Var struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// ParseConf returns what NCCL would setenv from data, in file order:
// the first definition of each name (later ones are no-ops for setenv with
// overwrite 0). Names and values are kept byte for byte, spaces included:
// "NCCL_IB_TC = 106" defines "NCCL_IB_TC " as " 106".
func ParseConf(data []byte) []Var {
	var out []Var
	seen := map[string]bool{}
	for len(data) > 0 {
		// One fgets call: up to and including '\n', at most 4095 bytes.
		n := bytes.IndexByte(data, '\n') + 1
		if n == 0 || n > ncclLineBuf-1 {
			n = min(len(data), ncclLineBuf-1)
		}
		line := data[:n]
		data = data[n:]
		// C string functions stop at the first NUL.
		if i := bytes.IndexByte(line, 0); i >= 0 {
			line = line[:i]
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) > 0 && line[0] == '#' {
			continue
		}
		eq := bytes.IndexByte(line, '=')
		if eq < 0 {
			continue
		}
		name := string(line[:min(eq, ncclNameMax)])
		value := string(line[eq+1:][:min(len(line)-eq-1, ncclValMax)])
		// setenv(3) refuses an empty name (EINVAL); a name cannot hold '='.
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, Var{Name: name, Value: value})
	}
	return out
}

// Conflict is a definition outside the managed block of a name the
// block also defines. The block sits at the top of the file and NCCL keeps
// the first definition, so the user's line is now without effect; the
// caller should say so.
type Conflict struct {
	Line      int    `json:"line"` // 1-based, in the existing file
	Name      string `json:"name"`
	UserValue string `json:"user_value"`
	Managed   string `json:"managed_value"`
}

// ConfError is a value RenderConf refuses to write.
type ConfError struct {
	Name   string
	Reason string
}

func (e *ConfError) Error() string {
	return fmt.Sprintf("nccl.conf: %q: %s", e.Name, e.Reason)
}

// ErrManagedBlock is returned (wrapped) when the existing file's managed
// block is damaged: a BEGIN without END, an END without BEGIN, or a BEGIN
// inside the block. RenderConf then changes nothing: guessing where the
// block ends could delete the user's lines.
var ErrManagedBlock = errors.New("damaged rocectl managed block")

// RenderConf returns the new content of an NCCL config file: the
// managed block for profile with vars, as KEY=VALUE lines in the given order
// without spaces or quotes, at the top of the file, followed by every line
// of existing that lies outside any previous managed block, byte for byte
// and in order (line endings and a missing final newline included). Any
// previous managed block is removed wherever it was; nothing else is.
//
// The block goes first because NCCL keeps the first definition of a name: a
// user line above the block would override it. The user lines it now
// overrides come back as conflicts, for the caller to warn about.
//
// Rendering is idempotent: rendering the result again with the same profile
// and vars gives the same bytes.
func RenderConf(existing []byte, profile string, vars []Var) ([]byte, []Conflict, error) {
	if strings.ContainsAny(profile, "\r\n\x00") {
		return nil, nil, &ConfError{Name: profile, Reason: "profile name contains a line break or NUL"}
	}
	managed := map[string]string{}
	for _, v := range vars {
		if err := validateVar(v); err != nil {
			return nil, nil, err
		}
		if _, dup := managed[v.Name]; dup {
			return nil, nil, &ConfError{Name: v.Name, Reason: "defined twice"}
		}
		managed[v.Name] = v.Value
	}

	user, err := ncclUserLines(existing)
	if err != nil {
		return nil, nil, err
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, "%s (profile %s) - do not edit\n", ncclBeginMarker, profile)
	for _, v := range vars {
		b.WriteString(v.Name + "=" + v.Value + "\n")
	}
	b.WriteString(ncclEndMarker + "\n")

	var conflicts []Conflict
	for _, l := range user {
		b.Write(l.raw)
		for _, d := range ParseConf(l.raw) {
			if mv, ok := managed[d.Name]; ok {
				conflicts = append(conflicts, Conflict{Line: l.no, Name: d.Name, UserValue: d.Value, Managed: mv})
			}
		}
	}
	return b.Bytes(), conflicts, nil
}

type ncclLine struct {
	no  int    // 1-based line number
	raw []byte // the line with its terminator, if any
}

// ncclUserLines splits existing into lines and drops every managed block
// (markers included). Marker lines are recognised with or without a trailing
// CR, and the BEGIN marker whatever profile it names.
func ncclUserLines(existing []byte) ([]ncclLine, error) {
	var out []ncclLine
	in := false
	begin := 0
	no := 0
	for len(existing) > 0 {
		n := bytes.IndexByte(existing, '\n') + 1
		if n == 0 {
			n = len(existing)
		}
		raw := existing[:n]
		existing = existing[n:]
		no++
		text := strings.TrimSuffix(strings.TrimSuffix(string(raw), "\n"), "\r")
		isBegin := strings.HasPrefix(text, ncclBeginMarker)
		isEnd := text == ncclEndMarker
		switch {
		case isBegin && in:
			return nil, fmt.Errorf("line %d: BEGIN inside the block opened at line %d: %w", no, begin, ErrManagedBlock)
		case isBegin:
			in, begin = true, no
		case isEnd && !in:
			return nil, fmt.Errorf("line %d: END without BEGIN: %w", no, ErrManagedBlock)
		case isEnd:
			in = false
		case !in:
			out = append(out, ncclLine{no: no, raw: raw})
		}
	}
	if in {
		return nil, fmt.Errorf("line %d: BEGIN without END: %w", begin, ErrManagedBlock)
	}
	return out, nil
}

// validateVar refuses what NCCL would read differently from what the
// caller meant: names that are not plain identifiers (a space would become
// part of the name, '=' would split elsewhere, a leading '#' would make the
// line a comment), and values with line breaks, NUL, surrounding spaces
// (NCCL keeps them), or more bytes than NCCL keeps.
func validateVar(v Var) error {
	if v.Name == "" {
		return &ConfError{Name: v.Name, Reason: "empty name"}
	}
	if len(v.Name) > ncclNameMax {
		return &ConfError{Name: v.Name, Reason: fmt.Sprintf("name longer than NCCL's %d bytes", ncclNameMax)}
	}
	for i, c := range v.Name {
		ok := c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9'
		if !ok {
			return &ConfError{Name: v.Name, Reason: fmt.Sprintf("name has %q; only letters, digits and '_' are allowed", c)}
		}
	}
	switch {
	case v.Value == "":
		return &ConfError{Name: v.Name, Reason: "empty value"}
	case strings.ContainsAny(v.Value, "\r\n\x00"):
		return &ConfError{Name: v.Name, Reason: "value contains a line break or NUL"}
	case strings.TrimSpace(v.Value) != v.Value:
		return &ConfError{Name: v.Name, Reason: "value has leading or trailing white space, which NCCL would keep"}
	case len(v.Value) > ncclValMax:
		return &ConfError{Name: v.Name, Reason: fmt.Sprintf("value longer than NCCL's %d bytes", ncclValMax)}
	}
	return nil
}

// UpdateConf rewrites the NCCL config file at p (a host path such as
// "/etc/nccl.conf", under fs's root): render gets what the file holds (nil
// when there is no file) and returns what it should hold. The file is
// read and replaced through its directory, opened once (nic.FileIn), so
// both happen in the same directory even if one on the way is swapped for
// a symlink meanwhile: root's write cannot be sent elsewhere, and what a
// new file gets is what that directory's file held.
//
// The replacement is atomic: a temporary file in the same directory is
// written, fsynced, given its mode and owner, and renamed over p; then the
// directory is fsynced and the file read back. Readers see the old or the
// new file, never a mix, even across a crash.
//
// Mode and owner: the file is always 0644. NCCL opens the file as whatever
// user runs the job and silently ignores a file it cannot open, so a
// tighter mode would make the settings vanish for non-root jobs; the
// managed content is not secret. An existing file's owner and group are kept
// (the temporary file is chowned before the rename); a new file belongs to
// the writing process (root, for the agent). Extended attributes, ACLs and
// SELinux labels of the old file are not carried over.
//
// It writes nothing when the file already holds the content with mode
// 0644, and refuses: a read-only fs (ErrReadOnly); a symlink at p
// (renaming over it would replace the link, not the file it points to, and
// reading through it as root could copy any file's lines into the new
// one); a file with other hard links (the same, and the other names would
// keep the old content); anything not a regular file. It does not create
// missing directories. Errors keep the errno (errors.Is(err,
// syscall.EACCES) ...).
//
// dir, when not nil, is the directory the file must be in (ReadConfDir's,
// saved in a journal before the change): a directory that is another one
// now is refused (ErrDirChanged), so that neither the change nor its undo
// lands where a user who can rename a directory on the way sent it.
func UpdateConf(fs nic.FS, p string, dir *nic.DirID, render func(existing []byte) ([]byte, error)) error {
	if err := fs.CheckWrite("write", p); err != nil {
		return err
	}
	f, err := openIn(fs, p, dir)
	if err != nil {
		return err
	}
	defer f.Close()
	old, st, exists, err := readIn(f)
	if err != nil {
		return err
	}
	data, err := render(old)
	if err != nil {
		return err
	}
	return replaceIn(f, old, st, exists, data, 0o644)
}

// WriteConf replaces the file at p with data, as UpdateConf does.
func WriteConf(fs nic.FS, p string, data []byte) error {
	return UpdateConf(fs, p, nil, func([]byte) ([]byte, error) { return data, nil })
}

// ErrDirChanged is the refusal of a write or restore whose directory is no
// longer the one the file was saved from.
var ErrDirChanged = errors.New("is not the directory the file was saved from")

// openIn opens p's directory (nic.FileIn) and, with want, checks that it
// is that directory: the zero DirID stands for none.
func openIn(fs nic.FS, p string, want *nic.DirID) (*nic.FileIn, error) {
	f, err := fs.OpenFileIn(p)
	if err != nil {
		return nil, err
	}
	if want == nil {
		return f, nil
	}
	got, err := f.DirID()
	if err == nil && got != *want {
		err = fmt.Errorf("the directory of %s (device %d, inode %d) %w (device %d, inode %d; no directory: 0, 0): it was renamed or swapped since, and rocectl will not write through it", p, got.Dev, got.Ino, ErrDirChanged, want.Dev, want.Ino)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// RestoreConf puts a saved copy back at p (what ReadConfDir returned before
// a change): data with its mode, keeping the owner of the file there now;
// or, when the file did not exist (exists false), removes whatever is at p
// now, a symlink as the link. Either way it first removes the temp files
// of a rewrite that was killed before its rename (nic.FileIn.Temps).
// Refusals are UpdateConf's, dir's included.
func RestoreConf(fs nic.FS, p string, dir *nic.DirID, data []byte, mode os.FileMode, exists bool) error {
	if err := fs.CheckWrite("write", p); err != nil {
		return err
	}
	f, err := openIn(fs, p, dir)
	if err != nil {
		return err
	}
	defer f.Close()
	// A rewrite killed before its rename left its temp file: it goes
	// too, or the host is not as it was.
	if err := f.RemoveTemps(); err != nil {
		return err
	}
	if !exists {
		if err := f.Remove(); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	old, st, there, err := readIn(f)
	if err != nil {
		return err
	}
	return replaceIn(f, old, st, there, data, mode)
}

// Temps lists the temp files a rewrite of p killed before its rename left
// beside it (nic.FileIn.Temps), as host paths; none when p's directory
// does not exist.
func Temps(fs nic.FS, p string) ([]string, error) {
	f, err := fs.OpenFileIn(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Temps()
	var out []string
	for _, n := range names {
		out = append(out, path.Join(path.Dir(f.Path()), n))
	}
	return out, err
}

// ReadConf reads the file at p as UpdateConf does, refusing what it
// refuses: its content and mode, exists false (and no error) when there is
// no file.
func ReadConf(fs nic.FS, p string) (data []byte, mode os.FileMode, exists bool, err error) {
	data, mode, exists, _, err = ReadConfDir(fs, p)
	return data, mode, exists, err
}

// ReadConfDir is ReadConf that also returns the identity of the directory
// it read from (the zero DirID when there is none), for UpdateConf and
// RestoreConf to check that they write where the content came from.
func ReadConfDir(fs nic.FS, p string) (data []byte, mode os.FileMode, exists bool, dir nic.DirID, err error) {
	f, err := fs.OpenFileIn(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, false, nic.DirID{}, nil
	}
	if err != nil {
		return nil, 0, false, nic.DirID{}, err
	}
	defer f.Close()
	if dir, err = f.DirID(); err != nil {
		return nil, 0, false, nic.DirID{}, err
	}
	data, st, exists, err := readIn(f)
	return data, os.FileMode(st.Mode & 0o777), exists, dir, err
}

// readIn reads f's file for rewriting it; a missing file is not an error.
func readIn(f *nic.FileIn) ([]byte, unix.Stat_t, bool, error) {
	data, st, err := f.Read()
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, st, false, nil
	case errors.Is(err, nic.ErrSymlink):
		return nil, st, false, fmt.Errorf("%w; point rocectl at the file it links to", err)
	case errors.Is(err, nic.ErrHardLinked):
		return nil, st, false, fmt.Errorf("%w; rocectl replaces the file at this name only, so remove the other names first", err)
	case err != nil:
		return nil, st, false, err
	}
	return data, st, true, nil
}

// replaceIn puts data with mode at f's name, unless the file (old, st,
// exists, as readIn read it) already holds them, and reads it back.
func replaceIn(f *nic.FileIn, old []byte, st unix.Stat_t, exists bool, data []byte, mode os.FileMode) error {
	if exists && bytes.Equal(old, data) && os.FileMode(st.Mode&0o777) == mode.Perm() {
		return nil
	}
	var owner *[2]int
	if exists {
		owner = &[2]int{int(st.Uid), int(st.Gid)}
	}
	if err := f.Replace(data, mode, owner); err != nil {
		return err
	}
	got, _, err := f.Read()
	if err != nil {
		return fmt.Errorf("read back %s: %w", f.Path(), err)
	}
	if !bytes.Equal(got, data) {
		return fmt.Errorf("read back %s: the file holds %d bytes that differ from the %d written", f.Path(), len(got), len(data))
	}
	return nil
}
