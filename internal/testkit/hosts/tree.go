package hosts

import (
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
)

// tree is a host's sysfs/configfs/debugfs files in memory, each with the
// source its value came from, so the README can say file by file where
// every value came from.
type tree struct {
	nodes map[string]*node // by host path, "/sys/..."
}

type node struct {
	link   bool
	data   string // file content
	target string // symlink target, relative as on the host
	src    string // provenance
}

func newTree() *tree { return &tree{nodes: map[string]*node{}} }

// file adds a file; adding the same path twice is a generator bug.
func (t *tree) file(p, data, src string) {
	t.add(p, &node{data: data, src: src})
}

// link adds a relative symlink.
func (t *tree) link(p, target, src string) {
	if path.IsAbs(target) {
		panic("hosts: absolute symlink " + p)
	}
	t.add(p, &node{link: true, target: target, src: src})
}

func (t *tree) add(p string, n *node) {
	if !strings.HasPrefix(p, "/sys/") {
		panic("hosts: path outside /sys: " + p)
	}
	if _, dup := t.nodes[p]; dup {
		panic("hosts: duplicate path " + p)
	}
	t.nodes[p] = n
}

// set replaces an existing file's content (the lossless recipe editing the
// factory host).
func (t *tree) set(p, data, src string) {
	n, ok := t.nodes[p]
	if !ok || n.link {
		panic("hosts: set on missing file " + p)
	}
	n.data, n.src = data, src
}

func (t *tree) clone() *tree {
	c := newTree()
	for p, n := range t.nodes {
		v := *n
		c.nodes[p] = &v
	}
	return c
}

func (t *tree) paths() []string {
	ps := make([]string, 0, len(t.nodes))
	for p := range t.nodes {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}

// writeTo materialises the tree under root (root/sys/...).
func (t *tree) writeTo(root string) error {
	for _, p := range t.paths() {
		n := t.nodes[p]
		dst := root + p
		if err := os.MkdirAll(path.Dir(dst), 0o755); err != nil {
			return err
		}
		var err error
		if n.link {
			err = os.Symlink(n.target, dst)
		} else {
			err = os.WriteFile(dst, []byte(n.data), 0o644)
		}
		if err != nil {
			return fmt.Errorf("hosts: %s: %w", p, err)
		}
	}
	return nil
}

// dangling returns symlinks whose target is not in the tree: every link a
// fixture host has must lead somewhere, as on a real host.
func (t *tree) dangling() []string {
	var bad []string
	for _, p := range t.paths() {
		n := t.nodes[p]
		if !n.link {
			continue
		}
		target := path.Join(path.Dir(p), n.target)
		if !t.exists(target) {
			bad = append(bad, p+" -> "+n.target)
		}
	}
	return bad
}

// exists reports whether p is a node or a directory with nodes below it,
// following symlinks in p's parents.
func (t *tree) exists(p string) bool {
	p = t.resolve(p, 0)
	if _, ok := t.nodes[p]; ok {
		return true
	}
	for q := range t.nodes {
		if strings.HasPrefix(q, p+"/") {
			return true
		}
	}
	return false
}

func (t *tree) resolve(p string, depth int) string {
	if depth > 40 {
		return p
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	cur := "/"
	for i, part := range parts {
		cur = path.Join(cur, part)
		if n, ok := t.nodes[cur]; ok && n.link {
			next := path.Join(path.Dir(cur), n.target, path.Join(parts[i+1:]...))
			return t.resolve(next, depth+1)
		}
	}
	return cur
}
