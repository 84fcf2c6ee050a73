package main

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// kind is what the replay does with one recorded call.
type kind uint8

const (
	// kindPath is an O_PATH open: open, close. Nothing can be read
	// through such a descriptor; rocectl uses them to hold directories
	// and to probe whether a name exists.
	kindPath kind = iota
	// kindDir is an O_DIRECTORY open without O_PATH: open, getdents64
	// until it returns 0, close.
	kindDir
	// kindFile is any other open: open, fstat, one read of up to 4096
	// bytes, close — what rocectl does with a one-line attribute file.
	kindFile
	// kindList is a directory listed through a descriptor that no
	// openat2 of the list returned (rocectl's os.ReadDir opens with
	// openat, which the list does not trace): open it by the path strace
	// printed for it, getdents64 until 0, close.
	kindList
	// kindWrite is an open for writing (only with -writes, on a copy of
	// the tree): open, fstat, one write of the bytes the list shows
	// written through that descriptor, close — what rocectl does to set
	// one attribute.
	kindWrite
	nKinds
)

func (k kind) String() string {
	return [...]string{"O_PATH", "directory", "file", "listed by path", "written"}[k]
}

// outcome is what the recorded open returned.
type outcome uint8

const (
	opened  outcome = iota
	failed          // -1 and an errno: the replay must fail too
	unknown         // strace did not see the return (the process was killed mid-call)
)

// call is one open of the list, or one listing of a directory whose open
// the list does not have.
type call struct {
	line    int // in the list, 1-based: where the call starts
	kind    kind
	base    string // the directory rel is relative to: the dirfd's path as -y printed it; for kindList the directory itself
	rel     string // the name given to openat2; "" for kindList
	flags   uint64
	resolve uint64
	outcome outcome
	errno   string // when failed: ENOENT, EXDEV, …
	result  string // when opened: the path of the new descriptor as -y printed it ("" without -y)
	data    string // kindWrite: the bytes written through the descriptor (its first write; "" when the list has none)
}

// listStats counts what the list held besides the calls.
type listStats struct {
	lines    int
	joined   int // calls strace split into <unfinished …> and resumed halves
	getdents int // getdents64 calls
	ignored  int // other system calls, signals, exits
}

// O_ flags that strace prints, by name. The replay reads only, unless the
// list is parsed with writes allowed: then an open for writing an existing
// file is replayed with its write, and one that could create a file is
// still refused (writeFlags, createFlags).
var openFlags = map[string]uint64{
	"O_RDONLY": unix.O_RDONLY, "O_WRONLY": unix.O_WRONLY, "O_RDWR": unix.O_RDWR,
	"O_CREAT": unix.O_CREAT, "O_EXCL": unix.O_EXCL, "O_NOCTTY": unix.O_NOCTTY,
	"O_TRUNC": unix.O_TRUNC, "O_APPEND": unix.O_APPEND, "O_NONBLOCK": unix.O_NONBLOCK,
	"O_DSYNC": unix.O_DSYNC, "O_SYNC": unix.O_SYNC, "O_DIRECT": unix.O_DIRECT,
	"O_LARGEFILE": unix.O_LARGEFILE, "O_DIRECTORY": unix.O_DIRECTORY,
	"O_NOFOLLOW": unix.O_NOFOLLOW, "O_NOATIME": unix.O_NOATIME,
	"O_CLOEXEC": unix.O_CLOEXEC, "O_PATH": unix.O_PATH, "O_TMPFILE": unix.O_TMPFILE,
}

const writeFlags = unix.O_WRONLY | unix.O_RDWR | unix.O_CREAT | unix.O_TRUNC | unix.O_APPEND

// createFlags are the write flags a replay never makes, even with writes
// allowed: they could add files to the tree or write elsewhere than the
// list did.
const createFlags = unix.O_CREAT | unix.O_APPEND

// writes says whether an open with these flags could change the tree.
// O_TMPFILE includes O_DIRECTORY's bit, so it is tested whole.
func writes(flags uint64) bool {
	return flags&writeFlags != 0 || flags&unix.O_TMPFILE == unix.O_TMPFILE
}

// resolveCached is RESOLVE_CACHED (Linux 5.12), which x/sys does not name.
const resolveCached = 0x20

var resolveFlags = map[string]uint64{
	"RESOLVE_NO_XDEV": unix.RESOLVE_NO_XDEV, "RESOLVE_NO_MAGICLINKS": unix.RESOLVE_NO_MAGICLINKS,
	"RESOLVE_NO_SYMLINKS": unix.RESOLVE_NO_SYMLINKS, "RESOLVE_BENEATH": unix.RESOLVE_BENEATH,
	"RESOLVE_IN_ROOT": unix.RESOLVE_IN_ROOT, "RESOLVE_CACHED": resolveCached,
}

const (
	unfinished = " <unfinished ...>"
	maxErrors  = 20
)

// parseList reads the output of
//
//	strace -f -y -e trace=openat2,getdents64 -o LIST CMD
//
// and returns its openat2 calls, in the order they started, plus one
// kindList call for each directory listed to its end (getdents64 = 0)
// through a descriptor that no openat2 of the list returned.
//
// With writes, an openat2 for writing is a kindWrite call, and the list
// must also trace write(2) with its bytes whole (strace -e
// trace=openat2,getdents64,write -s 4096): the first write through the
// descriptor that open returned is the call's data. Writes through other
// descriptors (the output, a journal) are not the tree's and are left
// out. Without writes, an open for writing is an error. strace -f
// writes a call that another thread's output interrupts as two lines,
// "PID name(args <unfinished ...>" and later "PID <... name resumed>rest";
// the halves are joined by thread id. Every problem is reported, as
// name:line:col, up to maxErrors.
func parseList(name string, r io.Reader, writes bool) ([]call, listStats, error) {
	p := parser{name: name, writes: writes, pending: map[string]half{}, dirs: map[string]string{}, wfd: map[string]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		p.st.lines++
		p.line(p.st.lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		p.errs = append(p.errs, fmt.Errorf("%s:%d: %w", name, p.st.lines+1, err))
	}
	// A thread that never came back (killed mid-call) still made its
	// call, with all its arguments in the first half.
	left := slices.SortedFunc(maps.Values(p.pending), func(a, b half) int { return cmp.Compare(a.line, b.line) })
	p.pending = nil
	for _, h := range left {
		if strings.HasPrefix(h.text, "openat2(") {
			p.openat2(h.text, func(i int) (int, int) { return h.line, h.col + i })
		}
	}
	if len(p.errs) > maxErrors {
		n := len(p.errs) - maxErrors
		p.errs = append(p.errs[:maxErrors], fmt.Errorf("… and %d more", n))
	}
	return p.calls, p.st, errors.Join(p.errs...)
}

// half is the first half of a call strace split, or a whole call.
type half struct {
	text string
	line int // where text starts
	col  int // 1-based column of text[0] on that line
}

type parser struct {
	name    string
	writes  bool            // opens for writing are replayed (kindWrite)
	pending map[string]half // by thread id: calls waiting for their resumed half
	// dirs maps a descriptor number to the path of the directory an
	// openat2 of the list opened on it for listing (kindDir) and that has
	// not been listed to its end yet.
	dirs map[string]string
	// wfd maps a descriptor number to the index in calls of the open for
	// writing that returned it, until its first write.
	wfd   map[string]int
	calls []call
	st    listStats
	errs  []error
}

func (p *parser) errorf(line, col int, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("%s:%d:%d: %s", p.name, line, col, fmt.Sprintf(format, args...)))
}

func (p *parser) line(n int, s string) {
	// strace -f -o FILE starts each line with the thread id; without -f
	// there is none.
	tid, rest := "", s
	if i := strings.IndexByte(s, ' '); i > 0 && isDigits(s[:i]) {
		tid, rest = s[:i], strings.TrimLeft(s[i:], " ")
	}
	col := len(s) - len(rest) + 1
	switch {
	case rest == "":
		return
	case strings.HasPrefix(rest, "--- "), strings.HasPrefix(rest, "+++ "):
		p.st.ignored++ // a signal, an exit
		return
	case strings.HasPrefix(rest, "<... "):
		// "<... openat2 resumed>rest": the rest of the call this thread
		// started earlier.
		end := strings.Index(rest, " resumed>")
		if end < 0 {
			p.errorf(n, col, "a resumed call without \" resumed>\"")
			return
		}
		name := rest[len("<... "):end]
		h, ok := p.pending[tid]
		if !ok || !strings.HasPrefix(h.text, name+"(") {
			p.errorf(n, col, "%s resumed, but thread %s has no unfinished %s before it", name, tid, name)
			return
		}
		delete(p.pending, tid)
		tail := rest[end+len(" resumed>"):]
		p.st.joined++
		p.call(tid, h, tail, n, col+end+len(" resumed>"))
	default:
		p.call(tid, half{text: rest, line: n, col: col}, "", 0, 0)
	}
}

// call handles one call of thread tid: h.text, followed by tail (from
// line tline, column tcol) when strace split it.
func (p *parser) call(tid string, h half, tail string, tline, tcol int) {
	text := h.text + tail
	if t, ok := strings.CutSuffix(text, unfinished); ok {
		// Wait for the resumed half. (A call resumed and interrupted
		// again keeps the position of its first half only.)
		h.text = t
		p.pending[tid] = h
		return
	}
	// pos turns an offset in text into a line and column.
	pos := func(i int) (int, int) {
		if i < len(h.text) || tline == 0 {
			return h.line, h.col + i
		}
		return tline, tcol + i - len(h.text)
	}
	name, _, _ := strings.Cut(text, "(")
	switch name {
	case "openat2":
		p.openat2(text, pos)
	case "getdents64":
		p.st.getdents++
		p.getdents(text, pos)
	case "write":
		p.write(text, pos)
	default:
		p.st.ignored++
	}
}

// openat2(5</tmp/snap64>, "sys/class/net/x", {flags=O_RDONLY|O_PATH, resolve=RESOLVE_IN_ROOT}, 24) = 8</tmp/snap64/…>
func (p *parser) openat2(text string, pos func(int) (int, int)) {
	c := cursor{s: text, i: len("openat2(")}
	bad := func(format string, args ...any) {
		l, col := pos(c.i)
		p.errorf(l, col, format, args...)
	}
	var k call
	k.line, _ = pos(0)
	_, base, ok := c.fd()
	if !ok {
		bad("want the directory descriptor with its path, as strace -y prints it (5</path>)")
		return
	}
	k.base = base
	if !c.lit(", ") {
		bad("want \", \" after the directory")
		return
	}
	rel, ok := c.quoted()
	if !ok {
		bad("want the name, a quoted string")
		return
	}
	if strings.HasPrefix(c.rest(), "...") {
		bad("the name is cut short (strace prints whole paths; was the list edited?)")
		return
	}
	k.rel = rel
	if !c.lit(", {") {
		bad("want \", {\" before the open_how")
		return
	}
	end := strings.IndexByte(c.rest(), '}')
	if end < 0 {
		bad("the open_how has no closing \"}\"")
		return
	}
	haveFlags := false
	off := c.i
	for _, f := range strings.Split(c.rest()[:end], ", ") {
		key, val, _ := strings.Cut(f, "=")
		vcol := off + len(key) + 1
		switch key {
		case "flags":
			v, ok := p.bits(val, openFlags, vcol, pos)
			if !ok {
				return
			}
			switch {
			case writes(v) && !p.writes:
				l, col := pos(vcol)
				p.errorf(l, col, "flags %s could write: the replay only reads (-writes replays writes, on a copy of the tree)", val)
				return
			case v&createFlags != 0 || v&unix.O_TMPFILE == unix.O_TMPFILE:
				l, col := pos(vcol)
				p.errorf(l, col, "flags %s could create a file or write past its end: the replay writes only what is there", val)
				return
			}
			k.flags, haveFlags = v, true
		case "resolve":
			v, ok := p.bits(val, resolveFlags, vcol, pos)
			if !ok {
				return
			}
			k.resolve = v
		}
		off += len(f) + 2
	}
	if !haveFlags {
		bad("the open_how has no flags")
		return
	}
	c.i += end + 1
	// ", 24)" then the return value; the first half of a call that never
	// resumed ends at ", 24".
	_, after, closed := strings.Cut(c.rest(), ")")
	c.i = len(text) - len(after)
	ret := strings.TrimLeft(c.rest(), " ")
	c.i = len(text) - len(ret)
	switch {
	case !closed:
		k.outcome = unknown
	case !strings.HasPrefix(ret, "= "):
		bad("want \" = \" and the return value")
		return
	default:
		c.i += 2
		ret = ret[2:]
		switch {
		case strings.HasPrefix(ret, "-1 "):
			k.outcome = failed
			k.errno, _, _ = strings.Cut(ret[3:], " ")
		case strings.HasPrefix(ret, "?"):
			k.outcome = unknown
		default:
			fd, path, ok := c.fd()
			if !ok && fd == "" {
				bad("want the new descriptor, or -1 and an errno")
				return
			}
			k.outcome, k.result = opened, path
			if k.flags&(unix.O_DIRECTORY|unix.O_PATH) == unix.O_DIRECTORY && path != "" {
				p.dirs[fd] = path
			}
			if writes(k.flags) {
				p.wfd[fd] = len(p.calls)
			}
		}
	}
	switch {
	case writes(k.flags):
		k.kind = kindWrite
	case k.flags&unix.O_PATH != 0:
		k.kind = kindPath
	case k.flags&unix.O_DIRECTORY != 0:
		k.kind = kindDir
	default:
		k.kind = kindFile
	}
	p.calls = append(p.calls, k)
}

// getdents64(8</tmp/snap64/sys/class/infiniband>, 0x37d489be000 /* 0 entries */, 8192) = 0
//
// The call that returns 0 (or fails) ends a listing. If an openat2 of the
// list opened that descriptor on that directory, the replay of that open
// already lists it; otherwise the listing is a call of its own (kindList).
func (p *parser) getdents(text string, pos func(int) (int, int)) {
	c := cursor{s: text, i: len("getdents64(")}
	fd, dir, ok := p.fdArg(&c, pos, "8</path>")
	if !ok {
		return
	}
	_, ret, ok := cutLast(text, ") = ")
	if !ok {
		return // unfinished and never resumed: the listing goes on no further
	}
	if ret != "0" && !strings.HasPrefix(ret, "-1 ") {
		return // entries: the listing goes on
	}
	if p.dirs[fd] == dir {
		delete(p.dirs, fd)
		return
	}
	line, _ := pos(0)
	p.calls = append(p.calls, call{line: line, kind: kindList, base: dir, outcome: opened})
}

// write(14</root/sys/…/enable/3>, "1\n", 2) = 2
//
// The first write through a descriptor an open for writing of the list
// returned, on the same file, is that open's data; any other write is not
// the tree's (the output, a journal) and is left out.
func (p *parser) write(text string, pos func(int) (int, int)) {
	c := cursor{s: text, i: len("write(")}
	fd, path, ok := p.fdArg(&c, pos, "14</path>")
	if !ok {
		return
	}
	i, mine := p.wfd[fd]
	if !mine || p.calls[i].result != path {
		return
	}
	delete(p.wfd, fd)
	bad := func(what string) {
		l, col := pos(c.i)
		p.errorf(l, col, "%s", what)
	}
	if !c.lit(", ") {
		bad("want \", \" after the descriptor")
		return
	}
	data, ok := c.quoted()
	switch {
	case !ok:
		bad("want the bytes written, a quoted string")
	case strings.HasPrefix(c.rest(), "..."):
		bad("the bytes written are cut short: trace with -s 4096")
	default:
		p.calls[i].data = data
	}
}

// fdArg reads a call's descriptor argument and the path strace -y printed
// for it (example: how it looks), or reports where it is missing.
func (p *parser) fdArg(c *cursor, pos func(int) (int, int), example string) (fd, path string, ok bool) {
	fd, path, ok = c.fd()
	if !ok {
		l, col := pos(c.i)
		p.errorf(l, col, "want the descriptor with its path, as strace -y prints it (%s)", example)
	}
	return fd, path, ok
}

// bits decodes "O_RDONLY|O_CLOEXEC" or "RESOLVE_BENEATH|0x40" or "0".
func (p *parser) bits(val string, names map[string]uint64, col int, pos func(int) (int, int)) (uint64, bool) {
	var v uint64
	for _, f := range strings.Split(val, "|") {
		if b, ok := names[f]; ok {
			v |= b
		} else if b, err := strconv.ParseUint(f, 0, 64); err == nil {
			v |= b
		} else {
			l, c := pos(col)
			p.errorf(l, c, "unknown flag %q", f)
			return 0, false
		}
		col += len(f) + 1
	}
	return v, true
}

// cursor walks one call's text.
type cursor struct {
	s string
	i int
}

func (c *cursor) rest() string { return c.s[c.i:] }

func (c *cursor) lit(s string) bool {
	if strings.HasPrefix(c.rest(), s) {
		c.i += len(s)
		return true
	}
	return false
}

// fd reads "8</path>" (or "AT_FDCWD</path>"): the number and the path -y
// printed, unescaped. ok is false when there is no path (no -y); fd is
// still returned when there is a number.
func (c *cursor) fd() (fd, path string, ok bool) {
	r := c.rest()
	n := 0
	for n < len(r) && (r[n] >= '0' && r[n] <= '9') {
		n++
	}
	if n == 0 && strings.HasPrefix(r, "AT_FDCWD") {
		n = len("AT_FDCWD")
	}
	if n == 0 {
		return "", "", false
	}
	fd = r[:n]
	if n == len(r) || r[n] != '<' {
		c.i += n
		return fd, "", false
	}
	// strace escapes '<' and '>' inside the path (as \74, \76).
	end := strings.IndexByte(r[n:], '>')
	if end < 0 {
		return fd, "", false
	}
	path, ok = unescape(r[n+1 : n+end])
	if !ok {
		return fd, "", false
	}
	c.i += n + end + 1
	return fd, path, true
}

// quoted reads a string strace quoted, unescaped.
func (c *cursor) quoted() (string, bool) {
	r := c.rest()
	if !strings.HasPrefix(r, `"`) {
		return "", false
	}
	for i := 1; i < len(r); i++ {
		switch r[i] {
		case '\\':
			i++
		case '"':
			s, ok := unescape(r[1:i])
			if ok {
				c.i += i + 1
			}
			return s, ok
		}
	}
	return "", false
}

// unescape undoes strace's C-style quoting: \\ \" \n \t \r \v \f, \xHH and
// octal of one to three digits (strace writes \1, not \001, when no digit
// follows).
func unescape(s string) (string, bool) {
	if strings.IndexByte(s, '\\') < 0 {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		i++
		if i == len(s) {
			return "", false
		}
		switch e := s[i]; e {
		case '\\', '"', '\'':
			b.WriteByte(e)
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'v':
			b.WriteByte('\v')
		case 'f':
			b.WriteByte('\f')
		case 'x':
			if i+2 >= len(s) {
				return "", false
			}
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				return "", false
			}
			b.WriteByte(byte(v))
			i += 2
		default:
			n := 0
			for n < 3 && i+n < len(s) && s[i+n] >= '0' && s[i+n] <= '7' {
				n++
			}
			if n == 0 {
				return "", false
			}
			v, err := strconv.ParseUint(s[i:i+n], 8, 16)
			if err != nil || v > 0xff {
				return "", false
			}
			b.WriteByte(byte(v))
			i += n - 1
		}
	}
	return b.String(), true
}

func isDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func cutLast(s, sep string) (string, string, bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}
