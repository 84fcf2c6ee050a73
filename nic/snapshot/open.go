package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/rocectl/rocectl/internal/lib/parallel"
	"github.com/rocectl/rocectl/internal/lib/thp"
	"github.com/rocectl/rocectl/nic"
)

// ErrNotSnapshot is returned by Open for a directory without snapshot.json.
var ErrNotSnapshot = errors.New("not a rocectl snapshot")

// Snapshot is an opened snapshot directory.
type Snapshot struct {
	Meta   Meta
	dir    string
	kernel *KernelState // every LinkState.Stats nil: they are in stats
	stats  map[string]rawCounters
	// unreadable answers FS reads of Meta.Unreadable's paths with the
	// errno each failed with on the host.
	unreadable *nic.Unreadable
	// files are the captured files of a packed snapshot (PackFile); nil
	// for a tree.
	files *nic.MemTree
}

// kernelFile is kernel.json as Open decodes it: a KernelState whose links
// keep their counters undecoded (counters.go). The shadowing fields win
// over the embedded ones of the same JSON name; all others decode into the
// embedded structs, with the same strictness.
type kernelFile struct {
	*KernelState
	Links map[string]*linkFile `json:"links"`
}

type linkFile struct {
	*LinkState
	Stats rawCounters `json:"stats,omitempty"`
}

// Open reads DIR/snapshot.json and DIR/kernel.json. It fails with an error
// wrapping ErrNotSnapshot when snapshot.json is missing, and names the file
// and the problem when either file is garbled or of another format.
func Open(dir string) (*Snapshot, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("snapshot: %s is not a directory: %w", dir, ErrNotSnapshot)
	}
	// kernel.json and the pack are read and decoded while snapshot.json
	// is; what is wrong with snapshot.json is still reported first, and
	// a directory without one is no snapshot, whatever else it holds:
	// one that has none is not read at all (a wrong --snapshot may name
	// a directory of big files).
	metaPath := filepath.Join(dir, MetaFile)
	if _, err := os.Lstat(metaPath); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("snapshot: %s has no %s: %w", dir, MetaFile, ErrNotSnapshot)
	}
	type kernel struct {
		ks    *KernelState
		stats map[string]rawCounters
		err   error
	}
	kc := make(chan kernel, 1)
	go func() {
		ks, stats, err := readKernel(filepath.Join(dir, KernelFile))
		kc <- kernel{ks, stats, err}
	}()
	type pack struct {
		t   *nic.MemTree
		err error
	}
	pc := make(chan pack, 1)
	go func() {
		t, err := readPack(dir)
		pc <- pack{t, err}
	}()
	var meta Meta
	mb, err := readRegular(metaPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		err = fmt.Errorf("snapshot: %s has no %s: %w", dir, MetaFile, ErrNotSnapshot)
	case err != nil:
		err = fmt.Errorf("snapshot: %w", err)
	default:
		meta, err = parseMeta(metaPath, mb)
	}
	// Parsed here, while the goroutines decode, not at the first read
	// that finds no file (discovery's first, on every host): 1 ms for a
	// 64-port capture's 1,500 unreadable paths.
	var unreadable *nic.Unreadable
	if err == nil {
		unreadable = nic.NewUnreadable(meta.Unreadable, ParseErrno)
		unreadable.Load()
	}
	k, pk := <-kc, <-pc
	if err != nil {
		return nil, err
	}
	if meta.Format != Format {
		return nil, fmt.Errorf("snapshot: %s: format %q, this rocectl reads %q", filepath.Join(dir, MetaFile), meta.Format, Format)
	}
	if k.err != nil {
		return nil, k.err
	}
	if pk.err != nil {
		return nil, pk.err
	}
	return &Snapshot{Meta: meta, dir: dir, kernel: k.ks, stats: k.stats, files: pk.t, unreadable: unreadable}, nil
}

// readPack reads dir's PackFile: nil, and no error, when there is none. A
// snapshot with a pack holds no tree beside it: which would be the capture?
func readPack(dir string) (*nic.MemTree, error) {
	p := filepath.Join(dir, PackFile)
	b, err := readRegular(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	for _, e := range ents {
		if !snapshotFiles[e.Name()] {
			return nil, fmt.Errorf("snapshot: %s holds both %s and a tree of files (%s): unpack the one or remove the other", dir, PackFile, e.Name())
		}
	}
	return parsePack(p, b)
}

// parseMeta reads snapshot.json (b, the content of path), its unreadable
// list apart (cutMember).
func parseMeta(path string, b []byte) (Meta, error) {
	var meta Meta
	rest, lists, ok := cutMember(b, "unreadable")
	if !ok {
		rest, lists = b, nil
	}
	if err := decodeJSON(path, rest, &meta); err != nil {
		return meta, err
	}
	for _, l := range lists { // a repeated member replaces the list, as encoding/json does
		var err error
		if meta.Unreadable, err = stringList(l); err != nil {
			return meta, fmt.Errorf("snapshot: %s: unreadable: %w", path, err)
		}
	}
	return meta, nil
}

// readKernel reads kernel.json, keeping each link's counters undecoded.
func readKernel(path string) (*KernelState, map[string]rawCounters, error) {
	b, err := readRegular(path)
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot: %w", err)
	}
	return parseKernel(path, b, true)
}

// ReadMeta reads dir's snapshot.json alone, as Open does; ok is false when
// there is none (dir is no snapshot).
func ReadMeta(dir string) (meta Meta, ok bool, err error) {
	p := filepath.Join(dir, MetaFile)
	b, err := readRegular(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Meta{}, false, nil
	}
	if err != nil {
		return Meta{}, false, fmt.Errorf("snapshot: %w", err)
	}
	meta, err = parseMeta(p, b)
	return meta, err == nil, err
}

// readRegular reads the snapshot's own file p, which must be a regular
// file and not a symlink: a snapshot is often another user's directory,
// and root reading it must neither block on a FIFO put there (O_NONBLOCK
// keeps the open from waiting, the check refuses the read) nor read a
// file a link points at (its content would come back in a decoding error).
// A file larger than MaxFile is refused before it is read.
// MaxFile bounds one file of a snapshot that readRegular reads: a 512-port
// host's kernel.json or files.pack is a few MiB; a snapshot that holds
// more was not written by rocectl.
const MaxFile = 256 << 20

// ErrTooLarge is the refusal of a snapshot file above MaxFile.
var ErrTooLarge = errors.New("snapshot file too large")

func readRegular(p string) ([]byte, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err == unix.ELOOP {
		return nil, &os.PathError{Op: "open", Path: p, Err: fmt.Errorf("%w: it is a symlink", nic.ErrNotRegular)}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: p, Err: err}
	}
	if err := nic.CheckRegular(st.Mode); err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	if st.Size > MaxFile {
		return nil, &os.PathError{Op: "read", Path: p, Err: fmt.Errorf("%w: %d bytes, larger than the %d MiB cap for a snapshot file", ErrTooLarge, st.Size, MaxFile>>20)}
	}
	// Read into a buffer of the file's size (and a byte more, to see the
	// end): io.ReadAll grows one from 512 bytes, copying a 64-port host's
	// files (0.5 to 1 MB each) a dozen times over.
	// A 64-port pack (1.2 MB) goes on huge pages (internal/lib/thp): its
	// small pages' faults were most of the 2.3 ms its read took.
	buf := thp.Slice[byte](int(st.Size) + 1)
	for {
		if len(buf) == cap(buf) {
			if len(buf) > MaxFile {
				return nil, &os.PathError{Op: "read", Path: p, Err: fmt.Errorf("%w: it grew past the %d MiB cap for a snapshot file while read", ErrTooLarge, MaxFile>>20)}
			}
			buf = slices.Grow(buf, len(buf)) // it grew since the fstat
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// parseKernel is readKernel of b, the content of path. With byLink it
// decodes the links on their own first (decodeLinks); tests compare
// that with the serial read.
func parseKernel(path string, b []byte, byLink bool) (*KernelState, map[string]rawCounters, error) {
	var ks KernelState
	kf := kernelFile{KernelState: &ks}
	var cut map[string][]counterText
	ok := false
	if byLink {
		cut, ok = decodeLinks(path, b, &kf)
	}
	if !ok {
		// The serial read, whose errors are the ones Open reports.
		ks, kf = KernelState{}, kernelFile{KernelState: &ks}
		rest, whole, ok := splitCounters(b)
		if !ok {
			rest, whole = b, nil
		}
		if err := decodeJSON(path, rest, &kf); err != nil {
			return nil, nil, err
		}
		cut = whole
	}
	ks.Links = make(map[string]*LinkState, len(kf.Links))
	stats := make(map[string]rawCounters, len(kf.Links))
	for name, lf := range kf.Links {
		switch {
		case lf == nil:
			ks.Links[name] = nil // Validate names it
			continue
		case lf.LinkState == nil: // no member but (maybe) stats
			lf.LinkState = &LinkState{}
		}
		ks.Links[name] = lf.LinkState
		for _, raw := range cut[name] {
			if err := lf.Stats.add(raw); err != nil {
				return nil, nil, fmt.Errorf("snapshot: %s: links[%q].stats: %w", path, name, err)
			}
		}
		if lf.Stats != nil {
			stats[name] = lf.Stats
		}
	}
	if err := ks.Validate(); err != nil {
		return nil, nil, fmt.Errorf("snapshot: %s: %w", path, err)
	}
	return &ks, stats, nil
}

// decodeLinks decodes kernel.json (b, the content of path) into kf as
// the serial read does (splitCounters, then one decode of the rest), but
// each link on its own, a few at a time, and through fastLink
// (fastlink.go) where the link's text is plain: encoding/json took 3.3 ms
// of CPU for a 64-port file, nearly all of it the links' own state. It
// returns each link's counters, as splitCounters does. ok is false when the file is not
// split as expected or anything in it fails to decode: the caller then
// reads it serially, which reports the error exactly as ever (which
// link, which member, the first problem in the file's order).
func decodeLinks(path string, b []byte, kf *kernelFile) (map[string][]counterText, bool) {
	top, spans, ok := splitLinks(b)
	if !ok {
		return nil, false
	}
	// The links are cut into a few runs (four per processor, so that a
	// slow one is not left alone at the end), each decoded in turn.
	runs := min(len(spans), 4*runtime.GOMAXPROCS(0))
	type link struct {
		lf    *linkFile
		stats []counterText
	}
	links := make([]link, len(spans))
	var failed atomic.Bool
	parallel.Each(runs+1, func(r int) {
		if r == runs {
			if !fastTop(top, kf) && decodeJSON(path, top, kf) != nil {
				failed.Store(true)
			}
			return
		}
		lo, hi := r*len(spans)/runs, (r+1)*len(spans)/runs
		var text []byte
		for i := lo; i < hi; i++ {
			sp := spans[i]
			var ok bool
			if plainName([]byte(sp.name)) {
				if links[i].lf, links[i].stats, ok = fastLink(b[sp.start:sp.end]); ok {
					continue
				}
			}
			// What fastLink declines: the link's text, compact and
			// without its counters, decoded by encoding/json.
			if text, links[i].stats, ok = splitLink(b, sp, text[:0]); !ok {
				failed.Store(true)
				return
			}
			dec := json.NewDecoder(bytes.NewReader(text))
			dec.DisallowUnknownFields()
			if dec.Decode(&links[i].lf) != nil || dec.More() {
				failed.Store(true)
				return
			}
		}
	})
	if failed.Load() {
		return nil, false
	}
	cut := map[string][]counterText{}
	for i, sp := range spans {
		l := links[i]
		// A repeated name replaces the link, counters included, as in
		// the whole file's map.
		kf.Links[sp.name] = l.lf
		delete(cut, sp.name)
		if l.stats != nil {
			cut[sp.name] = l.stats
		}
	}
	return cut, true
}

// decodeJSON decodes b, the content of path, strictly: unknown fields and
// trailing data are errors, because a snapshot that says more than rocectl
// understands should not be read as if it said less.
func decodeJSON(path string, b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("snapshot: %s: %w", path, err)
	}
	if dec.More() {
		return fmt.Errorf("snapshot: %s: trailing data after the JSON document", path)
	}
	return nil
}

// Dir is the snapshot directory.
func (s *Snapshot) Dir() string { return s.dir }

// FS is the read-only file system of the capture: host path /sys/x is
// DIR/sys/x. A file the capture could not read (Meta.Unreadable) fails to
// read with the errno it failed with on the host, not as absent.
func (s *Snapshot) FS() nic.FS {
	if s.files != nil {
		return nic.NewMemFS(s.dir, s.files).WithUnreadable(s.unreadable)
	}
	return nic.NewFS(s.dir, true).WithUnreadable(s.unreadable)
}

// Kernel answers from kernel.json; every write fails with an error wrapping
// nic.ErrReadOnly.
//
// When the snapshot did not capture the RDMA devices' sysfs
// (Meta.NotCaptured covers /sys/class/infiniband, as an import's does),
// the kernel is also a nic.NetdevLister of every netdev in kernel.json:
// discovery then keeps the netdevs no RDMA device claims as netdev-only
// ports instead of dropping what the dumps said about them.
func (s *Snapshot) Kernel() nic.Kernel {
	k := snapshotKernel{replay{reader{s.kernel}}, s.stats}
	if covers(s.Meta.NotCaptured, "/sys/class/infiniband") {
		return importedKernel{k}
	}
	return k
}

// covers says whether one of the path prefixes holds path.
func covers(prefixes []string, path string) bool {
	for _, p := range prefixes {
		p = strings.TrimSuffix(p, "/")
		if p == path || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// importedKernel is the kernel of a snapshot that does not know its RDMA
// devices.
type importedKernel struct{ snapshotKernel }

func (k importedKernel) NetdevsOfUnknownRDMA() []string {
	return slices.Sorted(maps.Keys(k.st.Links))
}

var _ nic.NetdevLister = importedKernel{}

// State returns a deep copy of kernel.json, e.g. to seed a Sim.
func (s *Snapshot) State() *KernelState {
	c := s.kernel.Clone()
	for name, raw := range s.stats {
		c.Links[name].Stats = raw.decode()
	}
	return c
}

// snapshotKernel is the replay kernel of an opened snapshot, whose
// counters are decoded on each Stats call (a fresh map, as reader.Stats
// returns a copy).
type snapshotKernel struct {
	replay
	stats map[string]rawCounters
}

func (k snapshotKernel) Stats(name string) (map[string]uint64, error) {
	raw, ok := k.stats[name]
	if !ok { // no such link, or no counters: the reader's error
		return k.replay.Stats(name)
	}
	if err := recorded(k.st.Links[name].Errors, OpStats, name); err != nil {
		return nil, err
	}
	return raw.decode(), nil
}
